import nodemailer from 'nodemailer'
import type { Config } from '../config.ts'
import { log } from './log.ts'

export interface Mail {
  to: string | string[]
  subject: string
  text: string
  html: string
  replyTo?: string
}

export interface Mailer {
  /** Resolves once the SMTP server accepted the message; rejects otherwise. */
  send(mail: Mail): Promise<void>
  close(): void
}

/**
 * The one module that sends e-mail. Over SMTP with nodemailer, or, without an SMTP server outside
 * production (config refuses that in production), into the log so development needs no mail server.
 */
export function createMailer(config: Pick<Config, 'mail'>): Mailer {
  const { mail } = config
  if (mail.transport === 'log') {
    return {
      async send(message) {
        log.info({ mail: { to: message.to, subject: message.subject, text: message.text } }, 'e-mail (no SMTP configured: logged, not sent)')
      },
      close() {},
    }
  }
  const transport = nodemailer.createTransport({
    host: mail.host,
    port: mail.port,
    secure: mail.port === 465,
    auth: mail.user ? { user: mail.user, pass: mail.password ?? '' } : undefined,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 20_000,
    disableFileAccess: true,
    disableUrlAccess: true,
  })
  return {
    async send(message) {
      const info = await transport.sendMail({
        from: mail.from,
        to: message.to,
        replyTo: message.replyTo,
        subject: oneLine(message.subject),
        text: message.text,
        html: message.html,
      })
      if (info.rejected.length > 0 && info.accepted.length === 0) throw new Error('all recipients were rejected')
    },
    close() {
      transport.close()
    },
  }
}

/** A header value never spans lines, so user text cannot add headers. */
export function oneLine(value: string): string {
  return value.replace(/[\r\n\u2028\u2029]+/g, ' ').trim()
}

export function escapeHtml(value: string): string {
  return value
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;')
}

/**
 * Text and HTML of one message from the same parts. Every value is escaped here, so a template
 * cannot forget to.
 */
export function renderMail(parts: { greeting?: string; paragraphs: string[]; link?: { label: string; url: string }; footer?: string }): {
  text: string
  html: string
} {
  const text = [
    parts.greeting,
    ...parts.paragraphs,
    parts.link ? `${parts.link.label}: ${parts.link.url}` : undefined,
    parts.footer,
  ]
    .filter((p): p is string => p !== undefined)
    .join('\n\n')
  const html = [
    parts.greeting ? `<p>${escapeHtml(parts.greeting)}</p>` : '',
    ...parts.paragraphs.map((p) => `<p>${escapeHtml(p).replaceAll('\n', '<br>')}</p>`),
    parts.link ? `<p><a href="${escapeHtml(parts.link.url)}">${escapeHtml(parts.link.label)}</a></p>` : '',
    parts.footer ? `<p style="color:#666">${escapeHtml(parts.footer)}</p>` : '',
  ].join('\n')
  return { text, html: `<!doctype html><html><body style="font-family:sans-serif">${html}</body></html>` }
}
