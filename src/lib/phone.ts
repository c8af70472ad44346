import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js'

/**
 * E.164 form of a phone number, or null when it is not a valid number. A national number is read in
 * `defaultCountry`; without one only the international form (+...) is accepted (decision 24).
 */
export function normalizePhone(input: string, defaultCountry?: CountryCode): string | null {
  const trimmed = input.trim()
  if (trimmed.length === 0 || trimmed.length > 32) return null
  const parsed = parsePhoneNumberFromString(trimmed, defaultCountry ? { defaultCountry } : undefined)
  return parsed?.isValid() ? parsed.number : null
}
