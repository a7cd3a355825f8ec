// SPDX-License-Identifier: GPL-2.0
#pragma once

// The table a run prints at its end, for a person at a terminal: one row
// per case, the verdict first, fit to the terminal's width. The cells that
// can be long (what was expected and observed, the pinners, the placement)
// are cut to fit; the reports keep their full text. Below the table, each
// case's reason, word-wrapped to the same width.

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace pinmatrix {

// The width when nothing says otherwise: a log, a pipe.
constexpr size_t default_table_width = 100;

// wrap_reasons: the reasons word-wrapped to width too, else one line each
// (a log that is read with grep).
std::string format_table(const nlohmann::json &cases, size_t width, bool wrap_reasons);

// The table for standard output: $COLUMNS wide when it is a whole number,
// else as wide as the terminal there, reasons wrapped; else (a log, a pipe)
// default_table_width wide with each reason on one line.
std::string format_table_for_stdout(const nlohmann::json &cases);

// $COLUMNS when it is a whole number, else the width of the terminal on
// standard output; nullopt when neither says.
std::optional<size_t> terminal_width();

// text word-wrapped to width columns: the first line after first_indent
// spaces, the others after next_indent; a word longer than a line is cut.
std::string wrap_words(const std::string &text, size_t width, size_t first_indent, size_t next_indent);

} // namespace pinmatrix
