// SPDX-License-Identifier: GPL-2.0
#pragma once

// Where pinmatrix's own files are: the guest's scripts (vm/), the Kconfig
// fragments (vm/kconfig/), the modules' sources (kmod/) and the matrix files
// (matrix/). Found relative to the running binary, never at a path compiled
// into it, so that a package or a copied build runs from wherever it lies:
//
//   installed   PREFIX/bin/pinmatrix    PREFIX/share/pinmatrix/
//   build tree  BUILD/pinmatrix         BUILD/share/pinmatrix/ (a symlink to
//                                       the source tree that CMake makes)
//
// The same relative layout in both: DATA/vm/guest/init, DATA/kmod/, ...

#include <filesystem>

namespace pinmatrix {

// The directory, looked up once. Throws std::runtime_error naming where it
// looked when neither place has DATA/vm/guest/init (a broken install).
const std::filesystem::path &data_dir();

// data_dir() for a given binary (tests).
std::filesystem::path data_dir_for(const std::filesystem::path &binary);

// Where kernels, test modules and initramfs are cached when --cache does not
// say: /var/cache/pinmatrix for root (one cache for every run on the host),
// else the user's own, $XDG_CACHE_HOME/pinmatrix or ~/.cache/pinmatrix (an
// XDG_CACHE_HOME that is not absolute is ignored, as the XDG Base Directory
// specification says). Without a HOME, /var/cache/pinmatrix (which
// --cache's check then refuses by name if it is not writable).
std::filesystem::path default_cache_dir();
std::filesystem::path default_cache_dir_for(bool root, const char *xdg_cache_home, const char *home);

// The default as --help and pinmatrix(1) say it (the same for every user:
// the man page is built once).
extern const char *const default_cache_help;

} // namespace pinmatrix
