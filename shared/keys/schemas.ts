import { z } from 'zod';

/** An account holds at most this many keys, active and revoked together. */
export const MAX_KEYS_PER_ACCOUNT = 100;
export const MAX_KEY_NAME_LENGTH = 100;

/**
 * Characters a key name may not hold: control characters (C0, DEL, C1), which break lines and terminals, the line and
 * paragraph separators and the interlinear annotation controls, and what Unicode says draws nothing wherever it is
 * (Default_Ignorable_Code_Point: bidirectional controls, zero-width space, word joiner, invisible operators, byte-order
 * mark, soft hyphen, Hangul fillers, tags, musical and shorthand controls...): all make a name display as something
 * else than it is in the dashboard, logs and listings. The format characters that draw a sign (the Arabic number
 * sign, Syriac and Kaithi marks) stay.
 */
const UNSAFE_NAME_CHARACTERS = /[\p{Cc}\p{Default_Ignorable_Code_Point}\u2028\u2029\uFFF9-\uFFFB]/u;
/**
 * The ignorable characters a name may hold all the same: the zero-width joiner and non-joiner and the variation
 * selectors, which scripts and emoji sequences need, and the tags of an emoji flag (black flag, a region's code in
 * tag digits and small letters, cancel tag: Scotland's, Wales's; UTS #51). No other tags: they spell text nobody sees.
 */
const NEEDED_IGNORABLE_CHARACTERS =
  /\u200C|\u200D|\p{Variation_Selector}|\u{1F3F4}[\u{E0030}-\u{E0039}\u{E0061}-\u{E007A}]{2,6}\u{E007F}/gu;
/**
 * What draws nothing of its own: combining marks, format characters (tags among them), spaces, and the letters and
 * symbols that are blank by design (Hangul fillers, the Braille blank).
 */
const VISIBLE_CHARACTER = /[^\p{M}\p{Cf}\p{Z}\s\u115F\u1160\u2800\u3164\uFFA0]/u;
/** More combining marks on one character than any script stacks: they draw over the rows around the name. */
const STACKED_MARKS = /\p{M}{5}/u;

/** Request bodies of the key-management routes; the handlers validate with these and nothing else. */
export const createKeyBody = z.strictObject({
  name: z
    .string()
    .trim()
    .min(1, { error: 'name must not be empty', abort: true })
    .max(MAX_KEY_NAME_LENGTH, `name must be at most ${MAX_KEY_NAME_LENGTH} characters`)
    .refine((name) => !UNSAFE_NAME_CHARACTERS.test(name.replace(NEEDED_IGNORABLE_CHARACTERS, '')), {
      message: 'name must not contain control characters, bidirectional formatting or invisible characters',
    })
    // A lone surrogate is no character: strict JSON readers (jq) refused the whole key list that held it (red team).
    // U+FFFD is what a body's bytes that were not UTF-8 are read as: such a name is not the one meant (round 31).
    .refine((name) => !/[\p{Cs}\uFFFD]/u.test(name), {
      message:
        'name must be well-formed Unicode (no lone surrogate, and no U+FFFD, which stands for bytes that were not UTF-8)',
    })
    .refine((name) => VISIBLE_CHARACTER.test(name), {
      message: 'name must show at least one visible character',
    })
    .refine((name) => !STACKED_MARKS.test(name), {
      message: 'name must not stack more than 4 combining marks on one character',
    })
    // One selects a glyph; more select nothing and draw nothing (round 31: "prod" and four of them showed alike).
    .refine((name) => !/\p{Variation_Selector}{2}/u.test(name), {
      message: 'name must not hold two variation selectors in a row',
    }),
});

export const updateKeyBody = z.strictObject({
  isActive: z.boolean(),
});

export type CreateKeyBody = z.infer<typeof createKeyBody>;
export type UpdateKeyBody = z.infer<typeof updateKeyBody>;
