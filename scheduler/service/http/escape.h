// Text escaping for the Prometheus text exposition format 0.0.4, and its float formatting. (JSON
// string literals: util/json.h; the UTF-8 repair both use: util/utf8.h.) Pure functions.
// Thread-safety: none needed (no state).
#pragma once

#include <string>
#include <string_view>

namespace phalanx::http {

// Prometheus label value (inside the quotes): `\` -> `\\`, `"` -> `\"`, newline -> `\n`;
// invalid UTF-8 replaced.
std::string EscapeLabelValue(std::string_view value);

// Prometheus HELP text: `\` -> `\\`, newline -> `\n`; invalid UTF-8 replaced.
std::string EscapeHelp(std::string_view help);

// A float as Go's strconv.FormatFloat(v, 'g', -1, 64) writes it, which is what the Prometheus
// Go client writes: the shortest digits that read back exactly, in exponent form when the
// exponent is below -4 or at least 6 ("0.0001", "123456.5", "1e-05", "1.2345675e+06",
// "1e+06"); "+Inf", "-Inf", "NaN". Used for histogram "le" values, so a bucket's label is the
// same as a Go exporter's.
std::string FormatFloat(double value);

// A sample value: integers below 2^53 in full ("1000000", "-3", "0"), so counts read as
// counts; anything else as FormatFloat.
std::string FormatValue(double value);

}  // namespace phalanx::http
