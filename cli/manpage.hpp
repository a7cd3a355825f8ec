// SPDX-License-Identifier: GPL-2.0
#pragma once

// pinmatrix(1), written from the commands' own help: each command's
// description, options, their types and defaults, and its exit codes (its
// footer). `pinmatrix --manpage` prints it; the build installs it
// (packaging/CMakeLists.txt), so the page says what --help says.

#include <string>
#include <string_view>

namespace CLI {
class App;
}

namespace pinmatrix {

// Text for a roff line: backslashes, minus signs, quotes and a leading
// control character escaped, so that no string of a help text is read
// as a request or an escape.
std::string roff_text(std::string_view s);

// The page, in man(7) macros. `date` (YYYY-MM-DD, or empty) goes in .TH.
std::string manpage(const CLI::App &app, std::string_view version, std::string_view date);

} // namespace pinmatrix
