// SPDX-License-Identifier: GPL-2.0
#include "cache_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <optional>
#include <ostream>
#include <regex>
#include <thread>

#include "kernel_info.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

namespace {

long now_seconds()
{
	return long(std::time(nullptr));
}

std::string duration_text(long seconds)
{
	if (seconds < 0)
		seconds = 0;
	return std::to_string(seconds / 60) + "m" + (seconds % 60 < 10 ? "0" : "") + std::to_string(seconds % 60) + "s";
}

std::string own_command_line()
{
	std::string cmdline = read_text_file("/proc/self/cmdline");
	for (char &c : cmdline)
		if (c == '\0' || c == '\t' || c == '\n')
			c = ' ';
	while (!cmdline.empty() && cmdline.back() == ' ')
		cmdline.pop_back();
	return cmdline.size() > 200 ? cmdline.substr(0, 200) + "..." : cmdline;
}

// The holder's line, then the lock is ours to keep.
void write_holder(int fd, const std::string &what)
{
	const std::string line = std::to_string(getpid()) + "\t" + std::to_string(now_seconds()) + "\t" + what +
				 "\t" + own_command_line() + "\n";
	if (ftruncate(fd, 0) == 0)
		(void)!pwrite(fd, line.data(), line.size(), 0);
}

std::string read_holder(const fs::path &file)
{
	std::string line = read_text_file(file.string());
	if (auto nl = line.find('\n'); nl != std::string::npos)
		line.resize(nl);
	return line;
}

} // namespace

std::string lock_holder_text(const std::string &line, long now)
{
	static const std::regex holder("([0-9]+)\t([0-9]+)\t[^\t]*\t(.*)");
	std::smatch m;
	if (!std::regex_match(line, m, holder))
		return "a process that has not said who it is yet";
	const std::string pid = m[1];
	std::string text = "PID " + pid;
	if (pid == std::to_string(getpid()))
		text += " (another guest of this run)";
	else if (!m[3].str().empty())
		text += " (" + m[3].str() + ")";
	return text + ", for " + duration_text(now - std::stol(m[2]));
}

cache_entry_lock::cache_entry_lock(const fs::path &cache, const std::string &name, const std::string &what,
				   std::ostream &say)
{
	static const std::regex file_name("[A-Za-z0-9][A-Za-z0-9._+-]*");
	if (!std::regex_match(name, file_name))
		throw std::invalid_argument("cache lock name '" + name + "' is not a file name");
	const fs::path file = cache / "locks" / (name + ".lock");
	std::error_code ec;
	fs::create_directories(file.parent_path(), ec);
	if (ec)
		throw std::system_error(ec, "lock " + file.parent_path().string());
	fd_.reset(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
	if (!fd_)
		throw last_sys_error("lock " + file.string());
	// A wait of a moment (another guest of a matrix finding its kernel
	// cached) is not worth a line: the first comes after a second, the
	// next ones a minute apart.
	using clock = std::chrono::steady_clock;
	const auto since = clock::now();
	std::optional<clock::time_point> said;
	while (flock(fd_.get(), LOCK_EX | LOCK_NB)) {
		if (errno != EWOULDBLOCK)
			throw last_sys_error("lock " + file.string());
		const auto now = clock::now();
		if (now - (said ? *said : since) >= (said ? std::chrono::seconds(60) : std::chrono::seconds(1))) {
			const long waited = long(std::chrono::duration_cast<std::chrono::seconds>(now - since).count());
			say << "pinmatrix: " << (said ? "still waiting (" + duration_text(waited) + ")" : "waiting")
			    << " for " << what << ": held by " << lock_holder_text(read_holder(file), now_seconds())
			    << " (" << file.string() << ")" << std::endl;
			said = now;
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(200));
	}
	write_holder(fd_.get(), what);
}

} // namespace pinmatrix
