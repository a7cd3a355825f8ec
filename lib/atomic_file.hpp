// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <filesystem>
#include <string_view>

namespace pinmatrix {

// Writes text to path through a temporary file beside it (PATH.tmp.PID) and
// rename(), so that a reader sees the old file or the new one, never half of
// one. On failure (a full disk, say) the old file stays whole, the temporary
// file is removed and sys_error is thrown with the errno.
void write_file_atomically(const std::filesystem::path &path, std::string_view text);

} // namespace pinmatrix
