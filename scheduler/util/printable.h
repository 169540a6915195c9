// Text from users shown on terminals and in logs, made harmless and measured in columns.
//
// Printable: what the users' commands print of a user-controlled string (job names, accounts,
// paths, reasons). Printable ASCII and well-formed UTF-8 stay as they are; control characters
// become visible escapes: \n \r \t for those three, \xNN for the other C0 bytes and DEL, \uNNNN
// for C1 controls (U+0080..U+009F) and the bidirectional overrides and isolates
// (U+202A..U+202E, U+2066..U+2069, which can make text read in another order); a byte that is
// not part of well-formed UTF-8 becomes U+FFFD. No ESC byte, newline or NUL survives.
// EscapeForLog: the same, but invalid bytes become \xNN (a log keeps what was sent).
//
// DisplayWidth: terminal columns of well-formed UTF-8, wcwidth-style from a compact range table
// (Unicode 15): 0 for combining marks, zero-width and format characters (ZWJ, variation
// selectors, Hangul medial/final jamo), 2 for East Asian Wide and Fullwidth characters and
// emoji shown as pictures, 1 for the rest (control characters count 1: measure Printable text).
// Emoji sequences joined by ZWJ count as the sum of their parts (terminals differ there).
//
// FitToWidth: a table cell `width` columns wide. Longer text is cut at a character boundary and
// ends in '+' (squeue cuts silently; the '+' says the value goes on), so the cell is exactly
// `width` columns; shorter text is padded with blanks (on the left when `right`).
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace phalanx {

inline constexpr char kTruncationMark = '+';

std::string Printable(std::string_view text);
std::string EscapeForLog(std::string_view text);

// Columns of one code point (0, 1 or 2).
int CodePointWidth(char32_t cp);
// Columns of `text` (invalid bytes count 1 each, as U+FFFD would).
size_t DisplayWidth(std::string_view text);

// `text` cut to at most `width` columns (with the mark when cut), then padded to exactly
// `width`; `width` 0 returns `text` as it is.
std::string FitToWidth(std::string_view text, size_t width, bool right = false);

}  // namespace phalanx
