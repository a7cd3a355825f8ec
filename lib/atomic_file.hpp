// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pinmatrix {

// Writes text to path through a new temporary file beside it (.NAME.XXXXXX,
// made with O_EXCL: never a name that exists, never a link someone planted;
// mode 0666 less the umask) and rename(), so that a reader sees the old file
// or the new one, never half of one. Only a new path or a regular file is
// replaced: a symbolic link, a FIFO, a device or a directory at path (or a
// path that ends in '/') is refused with usage_error before anything is
// made, and again just before the rename. On failure (a full disk, say) the
// old file stays whole, the temporary file is removed and sys_error is
// thrown with the errno.
void write_file_atomically(const std::filesystem::path &path, std::string_view text);

// What write_file_atomically() refuses, checked with no side effect (for a
// command's --out before it does anything): throws usage_error unless path
// is a new path or a regular file, and does not end in '/'.
void require_replaceable(const std::filesystem::path &path);

// Files that belong together in one directory: (name, text).
using file_set = std::vector<std::pair<std::string, std::string>>;

// Writes every file of files into dir, each as write_file_atomically()
// does, while holding an exclusive lock on dir itself (flock() on the
// directory: no lock file to plant or leave behind). Two writers into one
// directory take turns, so what a reader finds after both is one writer's
// whole set, never the files of one mixed with the other's. A writer that
// must wait says so on stderr.
void write_file_set(const std::filesystem::path &dir, const file_set &files);

} // namespace pinmatrix
