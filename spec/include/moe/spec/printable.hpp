#pragma once
// Text from outside the project (golden files' case and dataset names, file names, a plugin's
// messages and description) goes to terminals and CI logs, which act on control sequences: the
// one escaping every tool applies before such text is shown.
#include <string>
#include <string_view>

namespace moe {

// `text` with every byte of a C0 or C1 control character, DEL, a bidirectional or line-separator
// format character (U+200E, U+200F, U+2028-U+202E, U+2066-U+2069) and every byte that is not part
// of well-formed UTF-8 written as \xNN, and a backslash as \\: other UTF-8 text stays as it is, and
// two different texts never print the same.
std::string printable(std::string_view text);

// The text printable() printed as `printed` (reports carry case names printed; a glob may name a
// case as stored in its file): "\\" is a backslash, "\xNN" a byte. printable() is one-to-one, so
// from_printable(printable(t)) == t; text it cannot have written (a backslash before anything
// else) is kept as it is.
std::string from_printable(std::string_view printed);

}  // namespace moe
