// Exit 0 when the test MySQL server answers; used by scripts/test.sh to decide on the MySQL pass.
import { mysqlReachable, mysqlServer } from '../test/harness.ts'

const ok = await mysqlReachable()
if (!ok) console.error(`mysql-ping: no MySQL at ${mysqlServer.user}@${mysqlServer.host}:${mysqlServer.port}`)
process.exit(ok ? 0 : 1)
