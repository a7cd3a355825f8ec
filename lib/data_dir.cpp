// SPDX-License-Identifier: GPL-2.0
#include "data_dir.hpp"

#include <cstdlib>
#include <stdexcept>

#include <unistd.h>

namespace pinmatrix {

namespace fs = std::filesystem;

namespace {

// A file every complete data directory has.
const char *const marker = "vm/guest/init";

} // namespace

fs::path data_dir_for(const fs::path &binary)
{
	const fs::path bin_dir = binary.parent_path();
	const fs::path candidates[] = {bin_dir.parent_path() / "share/pinmatrix", bin_dir / "share/pinmatrix"};
	for (const auto &dir : candidates) {
		std::error_code ec;
		if (!fs::is_regular_file(dir / marker, ec))
			continue;
		const fs::path real = fs::canonical(dir, ec);
		return ec ? dir : real;
	}
	throw std::runtime_error("pinmatrix's data files are missing: no " + std::string(marker) + " in " +
				 candidates[0].string() + " (installed) or " + candidates[1].string() +
				 " (build tree); reinstall, or rerun cmake in the build directory");
}

const fs::path &data_dir()
{
	static const fs::path dir = data_dir_for(fs::read_symlink("/proc/self/exe"));
	return dir;
}

fs::path default_cache_dir_for(bool root, const char *xdg_cache_home, const char *home)
{
	const fs::path system_cache = "/var/cache/pinmatrix";
	if (root)
		return system_cache;
	if (xdg_cache_home && fs::path(xdg_cache_home).is_absolute())
		return fs::path(xdg_cache_home) / "pinmatrix";
	if (home && fs::path(home).is_absolute())
		return fs::path(home) / ".cache/pinmatrix";
	return system_cache;
}

fs::path default_cache_dir()
{
	return default_cache_dir_for(geteuid() == 0, std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
}

const char *const default_cache_help =
	"default: /var/cache/pinmatrix as root, else $XDG_CACHE_HOME/pinmatrix or ~/.cache/pinmatrix";

} // namespace pinmatrix
