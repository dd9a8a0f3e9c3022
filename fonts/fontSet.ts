/**
 * The fonts every capture has, locally and deployed: copied from npm packages pinned in package.json (never from
 * the host) into the browser bundle's `fonts/` folder, next to `fonts.conf` (this folder), which is the whole of
 * Chromium's font configuration. One weight each: Chromium synthesises bold and italic, and the layer must stay
 * within Lambda's 250 MiB with Chromium beside it. README.md, "Fonts", says how to add one.
 */
export interface FontFile {
  /** The npm package that ships the file (an exact version in package.json's dependencies). */
  package: string;
  /** The file inside the package: TrueType or OpenType, which Chromium's FreeType reads (it reads no WOFF). */
  path: string;
  /** The family name the file declares; fonts.conf refers to fonts by it. */
  family: string;
  /** What the file is in the set for. */
  covers: string;
  /**
   * OpenType tables left out of the copy. Noto Color Emoji carries its pictures twice: as COLRv1, which Chromium
   * draws, and as SVG (20 of its 25 MB) for browsers without COLRv1.
   */
  dropTables?: readonly string[];
}

export const FONT_SET: readonly FontFile[] = [
  {
    package: '@expo-google-fonts/noto-sans',
    path: '400Regular/NotoSans_400Regular.ttf',
    family: 'Noto Sans',
    covers: 'sans-serif: Latin, Greek, Cyrillic',
  },
  {
    package: '@expo-google-fonts/noto-serif',
    path: '400Regular/NotoSerif_400Regular.ttf',
    family: 'Noto Serif',
    covers: "serif, and the page's default font: Latin, Greek, Cyrillic",
  },
  {
    package: '@expo-google-fonts/noto-sans-mono',
    path: '400Regular/NotoSansMono_400Regular.ttf',
    family: 'Noto Sans Mono',
    covers: 'monospace: Latin, Greek, Cyrillic',
  },
  {
    package: '@expo-google-fonts/noto-sans-arabic',
    path: '400Regular/NotoSansArabic_400Regular.ttf',
    family: 'Noto Sans Arabic',
    covers: 'Arabic',
  },
  {
    package: '@expo-google-fonts/noto-sans-hebrew',
    path: '400Regular/NotoSansHebrew_400Regular.ttf',
    family: 'Noto Sans Hebrew',
    covers: 'Hebrew',
  },
  {
    package: '@expo-google-fonts/noto-sans-devanagari',
    path: '400Regular/NotoSansDevanagari_400Regular.ttf',
    family: 'Noto Sans Devanagari',
    covers: 'Devanagari (Hindi, Marathi, Nepali)',
  },
  {
    package: '@expo-google-fonts/noto-sans-bengali',
    path: '400Regular/NotoSansBengali_400Regular.ttf',
    family: 'Noto Sans Bengali',
    covers: 'Bengali',
  },
  {
    package: '@expo-google-fonts/noto-sans-tamil',
    path: '400Regular/NotoSansTamil_400Regular.ttf',
    family: 'Noto Sans Tamil',
    covers: 'Tamil',
  },
  {
    package: '@expo-google-fonts/noto-sans-thai',
    path: '400Regular/NotoSansThai_400Regular.ttf',
    family: 'Noto Sans Thai',
    covers: 'Thai',
  },
  {
    package: '@embedpdf/fonts-sc',
    path: 'fonts/NotoSansHans-Regular.otf',
    family: 'Noto Sans S Chinese',
    covers: 'Simplified Chinese (GB 2312), kana; the default for Han characters',
  },
  {
    package: '@embedpdf/fonts-tc',
    path: 'fonts/NotoSansHant-Regular.otf',
    family: 'Noto Sans T Chinese',
    covers: 'Traditional Chinese (Big5)',
  },
  {
    package: '@embedpdf/fonts-jp',
    path: 'fonts/NotoSansJP-Regular.otf',
    family: 'Noto Sans Japanese',
    covers: 'Japanese (JIS X 0208)',
  },
  {
    package: '@embedpdf/fonts-kr',
    path: 'fonts/NotoSansKR-Regular.otf',
    family: 'Noto Sans Korean',
    covers: 'Korean (Hangul, KS X 1001)',
  },
  {
    package: '@expo-google-fonts/noto-color-emoji',
    path: '400Regular/NotoColorEmoji_400Regular.ttf',
    family: 'Noto Color Emoji',
    covers: 'emoji, in colour (COLRv1)',
    dropTables: ['SVG '],
  },
];
