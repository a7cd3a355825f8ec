// SPDX-License-Identifier: GPL-2.0
#include "atomic_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>

#include "sys_error.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

void write_file_atomically(const fs::path &path, std::string_view text)
{
	auto tmp = path;
	tmp += ".tmp." + std::to_string(getpid());
	{
		std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
		if (!out)
			throw last_sys_error("open " + tmp.string());
		out.write(text.data(), std::streamsize(text.size()));
		out.flush();
		if (!out) {
			// A full disk: the old file stays whole and the space goes back.
			const int err = errno;
			out.close();
			std::error_code ignored;
			fs::remove(tmp, ignored);
			throw sys_error(err, "write " + path.string());
		}
	}
	std::error_code ec;
	fs::rename(tmp, path, ec);
	if (ec) {
		std::error_code ignored;
		fs::remove(tmp, ignored);
		throw sys_error(ec.value(), "rename to " + path.string());
	}
}

} // namespace pinmatrix
