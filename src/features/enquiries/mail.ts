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

/**
 * An admin's reply to the enquirer. From the service's address; Reply-To the team's inbox
 * (ENQUIRY_NOTIFY_TO) so an answer reaches whoever handles enquiries, not one admin's mailbox.
 */
export function replyMail(
  enquiry: { name: string; email: string; message: string; createdAt: string },
  body: string,
  team: readonly string[],
): Mail {
  return {
    to: oneLine(enquiry.email),
    replyTo: team.length > 0 ? team.map(oneLine).join(', ') : undefined,
    subject: 'Re: your enquiry',
    ...renderMail({
      greeting: `Hello ${enquiry.name},`,
      paragraphs: [body, `Your enquiry of ${enquiry.createdAt.slice(0, 10)}:\n${enquiry.message}`],
    }),
  }
}
