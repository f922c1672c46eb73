/**
 * The `lang` of a relay `prompt`, in ConversationRelay's form: a BCP 47 tag with its region ("en-US"),
 * where a speech-to-text service names only the language ("en", or ISO 639-3 "eng"). A detected
 * language that is the one the app asked prompts to be transcribed in gets the app's tag (its region
 * included: "en-GB" stays "en-GB"); another gets its likeliest region ("es" → "es-ES", "pt" →
 * "pt-BR"); with none detected, the app's tag, else "en-US".
 */
const DEFAULT_LANG = 'en-US';

function localeOf(tag: string | undefined): Intl.Locale | undefined {
  if (tag === undefined || tag.trim() === '') return undefined;
  try {
    return new Intl.Locale(tag.trim());
  } catch {
    return undefined;
  }
}

export function promptLang(detected: string | undefined, asked: string | undefined): string {
  const askedLocale = localeOf(asked);
  const fallback = askedLocale ? asked!.trim() : DEFAULT_LANG;
  const found = localeOf(detected);
  if (!found) return fallback;
  if (found.region !== undefined) return `${found.language}-${found.region}`;
  if (found.language === (askedLocale ?? new Intl.Locale(DEFAULT_LANG)).language) return fallback;
  const likely = found.maximize();
  return likely.region === undefined ? found.language : `${found.language}-${likely.region}`;
}
