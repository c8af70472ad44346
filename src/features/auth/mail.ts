import type { Mail } from '../../lib/mailer.ts'
import { renderMail } from '../../lib/mailer.ts'

export function resetPasswordMail(to: string, name: string, link: string): Mail {
  return {
    to,
    subject: 'Reset your password',
    ...renderMail({
      greeting: `Hello ${name},`,
      paragraphs: ['Someone asked to reset the password of your admin account. If it was you, choose a new password here:'],
      link: { label: 'Choose a new password', url: link },
      footer: 'The link works once, for 60 minutes. If you did not ask for it, ignore this e-mail: your password stays as it is.',
    }),
  }
}

export function inviteMail(to: string, name: string, link: string): Mail {
  return {
    to,
    subject: 'Your admin account',
    ...renderMail({
      greeting: `Hello ${name},`,
      paragraphs: ['An admin account was created for you. Choose your password to start using it:'],
      link: { label: 'Choose your password', url: link },
      footer: 'The link works once, for 60 minutes. Ask an administrator for a new one if it has expired.',
    }),
  }
}
