// SPDX-License-Identifier: GPL-2.0
#pragma once

// What a user names (a file, a directory, a name that becomes a path) is
// checked to be what it must be before anything is written, locked or
// downloaded. Each check throws usage_error "WHAT PATH: why not".

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pinmatrix {

// nullopt for a readable regular file; else why not: "not found",
// "is a character device, not a regular file", "is not readable".
std::optional<std::string> not_a_regular_file(const std::filesystem::path &p);
void require_regular_file(const std::filesystem::path &p, const std::string &what);

// A Kconfig fragment: only CONFIG_X=VALUE, "# CONFIG_X is not set",
// comments and blank lines, at least one option. The first other line is named.
void require_kconfig_fragment(const std::filesystem::path &p, const std::string &what);

// A patch: a non-empty regular file with a "--- " line followed by a "+++ " line.
void require_patch(const std::filesystem::path &p, const std::string &what);

// A directory that exists and is writable, or that can be created: its
// nearest existing ancestor is a writable directory.
void require_writable_dir(const std::filesystem::path &p, const std::string &what);

// Whether inner is outer or lies below it, as the paths resolve (links,
// "..", a trailing '/'); a path not there yet resolves as far as it exists.
bool is_within(const std::filesystem::path &inner, const std::filesystem::path &outer);

// An output that must not be an input: throws usage_error("WHAT OUT is
// INPUT, an input: it would be written over") when out and input are the
// same file or directory (as they resolve, or by device and inode).
void require_not_input(const std::filesystem::path &out, const std::filesystem::path &input,
		       const std::string &what);

// --format means one thing in every command: the form of what it prints on
// stdout (the files a command writes are the same in every form). Its
// refusal is one wording everywhere: "'xml': expected text, md or json"
// (CLI11 puts "--format: " before a validator's words), or "" for one of
// `forms`.
std::string format_refusal(std::string_view format, const std::vector<std::string> &forms);
// Throws usage_error "--format: " + format_refusal() for a form not in `forms`.
void require_format(std::string_view format, const std::vector<std::string> &forms);

// A name that becomes one path component: [A-Za-z0-9][A-Za-z0-9._+-]*, at
// most 64 characters (no '/', no "..", no NUL, nothing hidden).
void require_path_name(const std::string &name, const std::string &what);

} // namespace pinmatrix
