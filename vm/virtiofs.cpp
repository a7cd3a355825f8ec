// SPDX-License-Identifier: GPL-2.0
#include "virtiofs.hpp"

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "child_process.hpp"
#include "sys_error.hpp"
#include "unique_fd.hpp"

namespace fs = std::filesystem;

namespace pinmatrix {

namespace {

// Debian 12's, from qemu-system-common (QEMU 7.2's C virtiofsd).
const char *const c_virtiofsd = "/usr/lib/qemu/virtiofsd";

unique_fd listening_socket(const fs::path &path)
{
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	if (path.string().size() >= sizeof(addr.sun_path))
		throw std::runtime_error("socket path too long: " + path.string());
	std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
	unique_fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (!fd || bind(fd.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) || listen(fd.get(), 1))
		throw last_sys_error("listen on " + path.string());
	return fd;
}

// In the child (no allocation after a fork): what failed, with errno's
// text, to the parent; then out.
[[noreturn]] void child_fails(int to_parent, const char *what)
{
	const char *why = std::strerror(errno);
	for (const char *part : {what, ": ", why})
		if (write(to_parent, part, std::strlen(part)) < 0)
			break;
	_exit(127);
}

// In the child: every mount of a mount namespace of its own read-only.
void make_every_mount_read_only(int to_parent)
{
	if (unshare(CLONE_NEWNS))
		child_fails(to_parent, "unshare(CLONE_NEWNS)");
	if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr))
		child_fails(to_parent, "mount --make-rprivate /");
	mount_attr attr{};
	attr.attr_set = MOUNT_ATTR_RDONLY;
	if (syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &attr, sizeof(attr)))
		child_fails(to_parent, "mount_setattr(/, AT_RECURSIVE, MOUNT_ATTR_RDONLY) (Linux 5.12 and later)");
}

// In the child: FD as TARGET across the exec (dup2 onto itself would
// leave its close-on-exec flag).
int inherit_as(int fd, int target)
{
	return fd == target ? fcntl(fd, F_SETFD, 0) : dup2(fd, target);
}

// What the child reported before its exec: "" when the exec happened (the
// pipe closed on it).
std::string child_report(int from_child)
{
	std::string text;
	char buf[512];
	for (ssize_t n; (n = read(from_child, buf, sizeof(buf))) != 0;) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		text.append(buf, size_t(n));
	}
	return text;
}

// SIGTERM, up to two seconds to exit, then SIGKILL.
void end_child(pid_t pid)
{
	kill(pid, SIGTERM);
	for (int i = 0; i < 40; ++i) {
		if (waitpid(pid, nullptr, WNOHANG) == pid)
			return;
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
	kill(pid, SIGKILL);
	waitpid(pid, nullptr, 0);
}

} // namespace

std::string virtiofs_unmet()
{
	if (access(c_virtiofsd, X_OK) == 0)
		return "";
	return std::string("the guest's kernel has no 9p, and this host has no virtiofsd for its shares (") +
	       c_virtiofsd + ": apt-get install qemu-system-common)";
}

virtiofs_shares::virtiofs_shares(const fs::path &results_dir, const fs::path &log_dir)
{
	if (const std::string why = virtiofs_unmet(); !why.empty())
		throw unmet_need(why);
	char tmpl[] = "/tmp/pinmatrix-virtiofs.XXXXXX";
	if (!mkdtemp(tmpl))
		throw last_sys_error("mkdtemp /tmp/pinmatrix-virtiofs.XXXXXX");
	dir_ = tmpl;
	try {
		// cache=always for the root, as 9p's cache=loose: the guest only
		// reads it. None for the results: the host writes there while
		// the guest runs (a managed node's guest/stop).
		start("hostroot", "/", true, log_dir / "virtiofsd-hostroot.log");
		start("results", results_dir, false, log_dir / "virtiofsd-results.log");
	} catch (...) {
		for (const pid_t pid : pids_)
			end_child(pid);
		std::error_code ignored;
		fs::remove_all(dir_, ignored);
		throw;
	}
}

virtiofs_shares::~virtiofs_shares()
{
	for (const pid_t pid : pids_)
		end_child(pid);
	std::error_code ignored;
	fs::remove_all(dir_, ignored);
}

void virtiofs_shares::start(const std::string &tag, const fs::path &source, bool read_only, const fs::path &log)
{
	const unique_fd socket = listening_socket(dir_ / (tag + ".sock"));
	const unique_fd logfd(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
	if (!logfd)
		throw last_sys_error("open " + log.string());
	const std::vector<std::string> argv = {
		c_virtiofsd, "--fd=3", "-o",
		"source=" + source.string() + (read_only ? ",cache=always" : ",cache=none"), "-o",
		// The root cannot pivot_root into itself: chroot there.
		std::string("sandbox=") + (read_only ? "chroot" : "namespace")};
	std::vector<char *> args;
	for (const auto &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	const pid_t parent = getpid();
	piped_child child = fork_piped([&](int to_parent) {
		// Above 3, which the socket takes.
		const int report = fcntl(to_parent, F_DUPFD_CLOEXEC, 10);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(127);
		if (read_only)
			make_every_mount_read_only(report);
		const int null = ::open("/dev/null", O_RDONLY);
		if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(logfd.get(), STDOUT_FILENO) < 0 ||
		    dup2(logfd.get(), STDERR_FILENO) < 0 || inherit_as(socket.get(), 3) < 0)
			child_fails(report, "redirect virtiofsd's descriptors");
		execv(args[0], args.data());
		child_fails(report, "exec virtiofsd");
	});
	const std::string failed = child_report(child.from_child.get());
	if (!failed.empty()) {
		waitpid(child.pid, nullptr, 0);
		throw unmet_need("virtiofs share '" + tag + "': " + failed);
	}
	pids_.push_back(child.pid);
}

std::vector<std::string> virtiofs_shares::qemu_args(unsigned memory_mib) const
{
	std::vector<std::string> args = {"-object", "memory-backend-memfd,id=mem,share=on,size=" +
							    std::to_string(memory_mib) + "M",
					 "-numa", "node,memdev=mem"};
	for (const char *tag : {"hostroot", "results"})
		args.insert(args.end(), {"-chardev",
					 std::string("socket,id=vfs-") + tag + ",path=" + (dir_ / tag).string() + ".sock",
					 "-device", std::string("vhost-user-fs-pci,chardev=vfs-") + tag + ",tag=" + tag});
	return args;
}

} // namespace pinmatrix
