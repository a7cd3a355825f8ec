// SPDX-License-Identifier: GPL-2.0
#include "kernel_info.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "text.hpp"

namespace pinmatrix {

std::string read_text_file(const std::string &path)
{
	std::ifstream in(path);
	std::ostringstream s;
	s << in.rdbuf();
	return s.str();
}

task_state read_task_state(pid_t pid)
{
	const std::string proc = "/proc/" + std::to_string(pid);
	const std::string stat = read_text_file(proc + "/stat");
	task_state t;
	if (const auto close = stat.rfind(") "); close != std::string::npos && close + 2 < stat.size())
		t.state = stat.substr(close + 2, 1);
	t.wchan = trimmed(read_text_file(proc + "/wchan"));
	return t;
}

std::optional<cpu_time> read_cpu_time(pid_t pid)
{
	std::string stat;
	try {
		stat = read_text_file("/proc/" + std::to_string(pid) + "/stat");
	} catch (const std::exception &) {
		return std::nullopt;
	}
	// After "(comm) ": state is field 3, utime 14 and stime 15.
	const auto close = stat.rfind(") ");
	if (close == std::string::npos)
		return std::nullopt;
	std::istringstream fields(stat.substr(close + 2));
	std::string f;
	unsigned long long user = 0, system = 0;
	for (int field = 3; field < 14 && fields >> f; field++)
		;
	if (!(fields >> user >> system))
		return std::nullopt;
	const long tick = sysconf(_SC_CLK_TCK);
	return cpu_time{std::chrono::milliseconds(user * 1000 / tick), std::chrono::milliseconds(system * 1000 / tick)};
}

std::string task_state::where() const
{
	return "state " + (state.empty() ? std::string("?") : state) +
	       (wchan.empty() || wchan == "0" ? "" : " at " + wchan);
}

std::optional<uint64_t> read_number_file(const std::string &path)
{
	const std::string text = read_text_file(path);
	size_t used = 0;
	try {
		const uint64_t v = std::stoull(text, &used, 10);
		if (text.find_first_not_of(" \n", used) == std::string::npos && text[0] != '-')
			return v;
	} catch (const std::exception &) {
	}
	return std::nullopt;
}

kernel_info read_kernel_info()
{
	kernel_info k;
	utsname u{};
	if (!uname(&u)) {
		k.release = u.release;
		k.version = u.version;
		k.machine = u.machine;
	}
	k.cmdline = read_text_file("/proc/cmdline");
	while (!k.cmdline.empty() && (k.cmdline.back() == '\n' || k.cmdline.back() == ' '))
		k.cmdline.pop_back();
	return k;
}

std::map<std::string, uint64_t> read_vmstat()
{
	// Fold the per-CPU deltas first (root only; best effort): without it the
	// pin counters can lag by a few pages.
	std::ofstream("/proc/sys/vm/stat_refresh") << "1" << std::flush;
	std::map<std::string, uint64_t> out;
	std::ifstream in("/proc/vmstat");
	std::string key;
	uint64_t value = 0;
	while (in >> key >> value)
		out[key] = value;
	return out;
}

memlock_info read_memlock_info()
{
	memlock_info m;
	rlimit rl{};
	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY)
		m.limit_bytes = rl.rlim_cur;
	std::istringstream status(read_text_file("/proc/self/status"));
	std::string line;
	while (std::getline(status, line)) {
		std::istringstream fields(line);
		std::string key;
		fields >> key;
		if (key == "VmPin:")
			fields >> m.vm_pin_kb;
		else if (key == "VmLck:")
			fields >> m.vm_lck_kb;
		else if (key == "CapEff:") {
			std::string hex;
			fields >> hex;
			const uint64_t caps = std::stoull(hex, nullptr, 16);
			m.cap_ipc_lock = caps & (1ULL << 14); // CAP_IPC_LOCK
		}
	}
	return m;
}

std::optional<std::string> reap_within(pid_t pid, int &status, std::chrono::milliseconds bound)
{
	const auto end = std::chrono::steady_clock::now() + bound;
	for (;;) {
		const pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			return std::nullopt;
		if (std::chrono::steady_clock::now() >= end)
			break;
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	}
	return read_task_state(pid).where();
}

std::string module_state(const std::string &name, const std::string &dir)
{
	std::string sysfs_name = name;
	std::replace(sysfs_name.begin(), sysfs_name.end(), '-', '_');
	if (std::filesystem::exists("/sys/module/" + sysfs_name))
		return "loaded";
	utsname u{};
	uname(&u);
	const auto base = std::filesystem::path("/lib/modules") / u.release / "kernel" / dir;
	for (const char *ext : {".ko", ".ko.xz", ".ko.zst", ".ko.gz"})
		if (std::filesystem::exists(base / (name + ext)))
			return "not loaded";
	return "not built";
}

} // namespace pinmatrix
