import type { Mail } from '../../lib/mailer.ts'
import { oneLine, renderMail } from '../../lib/mailer.ts'
import type { PendingNotification } from './queries.ts'

/** The team's notification of a new enquiry; replying to it answers the enquirer. */
export function notificationMail(to: readonly string[], e: PendingNotification): Mail {
  return {
    to: [...to],
    replyTo: oneLine(e.email),
    subject: `New enquiry from ${oneLine(e.name)} (${e.source})`,
    ...renderMail({
      paragraphs: [
        `Name: ${e.name}\nE-mail: ${e.email}\nPhone: ${e.phone}\nSource: ${e.source}\nReceived: ${e.createdAt.toISOString()}`,
        e.message,
      ],
      footer: `Enquiry ${e.id}. Reply to this e-mail to answer ${e.name} directly.`,
    }),
  }
}
