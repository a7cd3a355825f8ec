// SPDX-License-Identifier: GPL-2.0
#include "atomic_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iostream>
#include <string>

#include "sys_error.hpp"
#include "unique_fd.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

namespace {

// This process's umask, without changing it (umask() would, for every
// thread at once): /proc/self/status says it.
mode_t current_umask()
{
	std::ifstream status("/proc/self/status");
	for (std::string line; std::getline(status, line);)
		if (line.rfind("Umask:", 0) == 0)
			return mode_t(std::stoul(line.substr(6), nullptr, 8));
	return 022;
}

} // namespace

void require_replaceable(const fs::path &path)
{
	if (!path.has_filename())
		throw usage_error(path.string() + ": names a directory, not a file");
	struct stat st;
	if (lstat(path.c_str(), &st)) {
		if (errno == ENOENT)
			return;
		throw last_sys_error("stat " + path.string());
	}
	if (!S_ISREG(st.st_mode))
		throw usage_error(path.string() + ": not a regular file (" +
				  (S_ISLNK(st.st_mode)   ? "a symbolic link"
				   : S_ISDIR(st.st_mode) ? "a directory"
				   : S_ISFIFO(st.st_mode) ? "a FIFO"
							  : "a device or socket") +
				  "): it is never written through or replaced");
}

namespace {

// A new file beside PATH, made here (O_EXCL: never an existing name, never
// a link someone planted), its name in tmp.
unique_fd make_temporary_beside(const fs::path &path, std::string &tmp)
{
	tmp = (path.parent_path() / ("." + path.filename().string() + ".XXXXXX")).string();
	unique_fd fd(mkostemp(tmp.data(), O_CLOEXEC));
	if (!fd)
		throw last_sys_error("create a temporary file beside " + path.string());
	if (fchmod(fd.get(), 0666 & ~current_umask())) {
		const int err = errno;
		unlink(tmp.c_str());
		throw sys_error(err, "chmod " + tmp);
	}
	return fd;
}

// All of text, or errno.
int write_all(int fd, std::string_view text)
{
	while (!text.empty()) {
		const ssize_t n = write(fd, text.data(), text.size());
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		text.remove_prefix(size_t(n));
	}
	return 0;
}

} // namespace

void write_file_atomically(const fs::path &path, std::string_view text)
{
	require_replaceable(path);
	std::string tmp;
	unique_fd fd = make_temporary_beside(path, tmp);
	if (const int err = write_all(fd.get(), text)) {
		// A full disk: the old file stays whole and the space goes back.
		unlink(tmp.c_str());
		throw sys_error(err, "write " + path.string());
	}
	fd.reset();
	// Checked again just before: what was planted meanwhile is refused too.
	try {
		require_replaceable(path);
	} catch (...) {
		unlink(tmp.c_str());
		throw;
	}
	if (rename(tmp.c_str(), path.c_str())) {
		const int err = errno;
		unlink(tmp.c_str());
		throw sys_error(err, "rename to " + path.string());
	}
}

namespace {

// dir locked for as long as the returned descriptor is open.
unique_fd lock_directory(const fs::path &dir)
{
	unique_fd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!fd)
		throw last_sys_error("open directory " + dir.string());
	if (flock(fd.get(), LOCK_EX | LOCK_NB) == 0)
		return fd;
	if (errno != EWOULDBLOCK)
		throw last_sys_error("lock " + dir.string());
	std::cerr << "pinmatrix: waiting for another writer of " << dir.string() << "\n";
	while (flock(fd.get(), LOCK_EX))
		if (errno != EINTR)
			throw last_sys_error("lock " + dir.string());
	return fd;
}

} // namespace

void write_file_set(const fs::path &dir, const file_set &files)
{
	for (const auto &[name, text] : files)
		require_replaceable(dir / name);
	const unique_fd lock = lock_directory(dir);
	for (const auto &[name, text] : files)
		write_file_atomically(dir / name, text);
}

} // namespace pinmatrix
