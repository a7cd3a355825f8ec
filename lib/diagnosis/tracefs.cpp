// SPDX-License-Identifier: GPL-2.0
#include "tracefs.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernel_info.hpp"
#include "sys_error.hpp"
#include "unique_fd.hpp"

namespace pinmatrix {

using nlohmann::json;
namespace fs = std::filesystem;

struct probe_spec {
	const char *role;
	bool ret;				// a kretprobe
	std::vector<const char *> symbols;	// per kernel version; the first that places wins
	const char *args;			// fetch arguments ($argN: x86-64, arm64, ...)
	const char *what;
};

namespace {

// Roles as lib/diagnosis/kernel_trace.hpp reads them.
const std::vector<probe_spec> specs = {
	{"ib_umem_get", false, {"ib_umem_get"}, "addr=$arg2:x64 size=$arg3:u64 access=$arg4:x32",
	 "RDMA core pins the range of a user MR"},
	{"ib_umem_get_ret", true, {"ib_umem_get"}, "ret=$retval:x64", "a umem, or -errno"},
	{"pin_user_pages_fast", false, {"pin_user_pages_fast"},
	 "start=$arg1:x64 nr_pages=$arg2:s32 gup_flags=$arg3:x32", "GUP entry: its gup_flags say FOLL_LONGTERM"},
	{"pin_user_pages_fast_ret", true, {"pin_user_pages_fast"}, "ret=$retval:s32", "pages pinned, or -errno"},
	{"gup_longterm", false, {"__gup_longterm_locked"}, "start=$arg2:x64 nr_pages=$arg3:u64",
	 "the long-term GUP slow path (the fast path refused a page)"},
	{"gup_longterm_ret", true, {"__gup_longterm_locked"}, "ret=$retval:s64", "pages pinned, or -errno"},
	{"longterm_check_ret", true, {"check_and_migrate_movable_pages", "check_and_migrate_movable_folios"},
	 "ret=$retval:s64", "6.1 / 6.12 placement check (often inlined)"},
	{"longterm_migrate_ret", true, {"migrate_longterm_unpinnable_pages", "migrate_longterm_unpinnable_folios"},
	 "ret=$retval:s32", "6.1 / 6.12 migration for long-term pins: -EAGAIN (moved, retry) or -ENOMEM"},
	{"migrate_pages_ret", true, {"migrate_pages"}, "ret=$retval:s32", "pages not migrated, or -errno"},
	{"provider_reg_mr_ret", true,
	 {"rxe_reg_user_mr", "mlx5_ib_reg_user_mr", "irdma_reg_user_mr", "bnxt_re_reg_user_mr", "efa_reg_mr"},
	 "ret=$retval:x64", "the driver's user-MR registration"},
};

const char *const tracepoints[] = {"migrate/mm_migrate_pages_start", "migrate/mm_migrate_pages",
				   "migrate/set_migration_pte", "migrate/remove_migration_pte"};

bool pid_alive(pid_t pid)
{
	if (kill(pid, 0) && errno == ESRCH)
		return false;
	// A reused pid of another program does not keep our leftovers alive.
	std::string comm = read_text_file("/proc/" + std::to_string(pid) + "/comm");
	return comm.rfind("pinmatrix", 0) == 0;
}

bool write_file(const std::string &path, const std::string &text, bool append, int *err)
{
	int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (append ? O_APPEND : O_TRUNC));
	if (fd < 0) {
		if (err)
			*err = errno;
		return false;
	}
	ssize_t n = ::write(fd, text.data(), text.size());
	int e = errno;
	::close(fd);
	if (n != ssize_t(text.size())) {
		if (err)
			*err = n < 0 ? e : EIO;
		return false;
	}
	return true;
}

// Async-signal-safe removal for a fatal signal: everything precomputed.
struct emergency_plan {
	pid_t owner = 0;
	char tracing_on[512] = {};
	char events_enable[512] = {};
	char instance[512] = {};
	char kprobe_events[512] = {};
	char removals[16][160] = {};
	int n = 0;
};
emergency_plan emergency;
bool emergency_armed = false;
struct sigaction previous[3];
const int fatal_signals[3] = {SIGINT, SIGTERM, SIGHUP};

bool raw_write(const char *path, const char *text, int flags)
{
	int fd = ::open(path, O_WRONLY | O_CLOEXEC | flags);
	if (fd < 0)
		return false;
	const bool ok = ::write(fd, text, strlen(text)) == ssize_t(strlen(text));
	::close(fd);
	return ok;
}

// A case process may hold the instance's trace_pipe or trace_marker open for
// a moment (EBUSY): a removal is retried for up to a second; gone already
// (ENOENT) is done. Async-signal-safe.
template <typename Removal>
bool remove_when_not_busy(Removal removal)
{
	for (int i = 0; i < 100; i++) {
		if (removal() || errno == ENOENT)
			return true;
		if (errno != EBUSY)
			return false;
		struct timespec ten_ms = {0, 10'000'000};
		nanosleep(&ten_ms, nullptr);
	}
	return false;
}

bool remove_instance(const char *instance)
{
	return remove_when_not_busy([instance] { return !::rmdir(instance); });
}

bool remove_probe(const char *kprobe_events, const char *removal)
{
	return remove_when_not_busy([=] { return raw_write(kprobe_events, removal, O_APPEND); });
}

void emergency_cleanup(int sig)
{
	if (getpid() == emergency.owner) {
		raw_write(emergency.tracing_on, "0", O_TRUNC);
		raw_write(emergency.events_enable, "0", O_TRUNC);
		remove_instance(emergency.instance);
		for (int i = 0; i < emergency.n; i++)
			remove_probe(emergency.kprobe_events, emergency.removals[i]);
	}
	for (int i = 0; i < 3; i++)
		if (fatal_signals[i] == sig)
			sigaction(sig, &previous[i], nullptr);
	raise(sig);
}

void copy(char *dst, size_t n, const std::string &s)
{
	std::snprintf(dst, n, "%s", s.c_str());
}

} // namespace

std::optional<std::string> find_tracefs()
{
	for (const char *p : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"})
		if (::access((std::string(p) + "/instances").c_str(), F_OK) == 0)
			return std::string(p);
	return std::nullopt;
}

bool trace_session::write(const std::string &file, const std::string &text, int *err) const
{
	return write_file(file, text, false, err);
}

std::unique_ptr<trace_session> trace_session::start()
{
	std::unique_ptr<trace_session> s(new trace_session());
	s->owner_ = getpid();
	utsname u{};
	if (!uname(&u)) {
		s->release_ = u.release;
		// Migration entry PTEs decode on x86-64 with 4-level paging (no la57).
		if (std::string(u.machine) == "x86_64")
			s->swp_pfn_bits_ = read_text_file("/proc/cpuinfo").find(" la57") == std::string::npos ? 34 : 0;
	}
	if (const char *off = getenv("PINMATRIX_NO_TRACE"); off && *off && std::string(off) != "0") {
		s->notes_.push_back("kernel tracing off (PINMATRIX_NO_TRACE)");
		return s;
	}
	try {
		s->setup();
	} catch (const std::exception &e) {
		s->notes_.push_back(std::string("kernel trace unavailable: ") + e.what());
		s->stop();
		s->available_ = false;
	}
	return s;
}

void trace_session::setup()
{
	auto root = find_tracefs();
	if (!root) {
		notes_.push_back("kernel trace unavailable: tracefs is not mounted (mount -t tracefs tracefs "
				 "/sys/kernel/tracing)");
		return;
	}
	tracefs_ = *root;
	const std::string kprobe_events = tracefs_ + "/kprobe_events";
	const bool have_kprobes = ::access(kprobe_events.c_str(), W_OK) == 0;

	remove_dead_instances();
	if (have_kprobes)
		remove_dead_probes(kprobe_events);
	create_instance();
	arm_emergency_cleanup(kprobe_events);
	if (!have_kprobes)
		notes_.push_back("no kprobe events here (" + kprobe_events +
				 " absent or not writable: CONFIG_KPROBE_EVENTS, or not root): only the "
				 "migrate: tracepoints are traced");
	for (const auto &spec : specs)
		probes_.push_back(have_kprobes ? place_probe(spec, kprobe_events)
					       : probe_status{spec.role, "", false, "no kprobe events"});
	enable_events();
	available_ = !placed_events_.empty() || !tracepoints_.empty();
	if (!available_)
		notes_.push_back("kernel trace unavailable: no probe and no tracepoint could be enabled");
}

// Leftovers of runs that were killed: their instance (its pid is gone).
void trace_session::remove_dead_instances()
{
	std::error_code ec;
	for (const auto &d : fs::directory_iterator(tracefs_ + "/instances", ec)) {
		const std::string n = d.path().filename();
		if (n.rfind("pinmatrix-", 0) != 0)
			continue;
		const pid_t pid = std::atoi(n.c_str() + 10);
		if (pid <= 0 || pid_alive(pid))
			continue;
		write(d.path().string() + "/tracing_on", "0");
		write(d.path().string() + "/events/enable", "0");
		if (!::rmdir(d.path().c_str()))
			cleaned_.push_back("instance " + n);
	}
}

// ... and their probes.
void trace_session::remove_dead_probes(const std::string &kprobe_events)
{
	std::istringstream lines(read_text_file(kprobe_events));
	for (std::string line; std::getline(lines, line);) {
		const size_t colon = line.find(':'), space = line.find(' ');
		if (colon == std::string::npos || space == std::string::npos || space < colon)
			continue;
		const std::string event = line.substr(colon + 1, space - colon - 1);
		if (event.rfind("pinmatrix_", 0) != 0)
			continue;
		const pid_t pid = std::atoi(event.c_str() + 10);
		if (pid <= 0 || pid_alive(pid))
			continue;
		if (write_file(kprobe_events, "-:" + event, true, nullptr))
			cleaned_.push_back("probe " + event);
	}
}

void trace_session::create_instance()
{
	instance_ = tracefs_ + "/instances/pinmatrix-" + std::to_string(owner_);
	group_ = "pinmatrix_" + std::to_string(owner_);
	if (::mkdir(instance_.c_str(), 0755) && errno != EEXIST) {
		const int err = errno;
		instance_.clear();
		throw std::runtime_error("cannot create a tracefs instance: " + errno_text(err));
	}
	write(instance_ + "/tracing_on", "0");
}

// Disarmed in stop(); children of fork() inherit it and do nothing.
void trace_session::arm_emergency_cleanup(const std::string &kprobe_events) const
{
	emergency.owner = owner_;
	copy(emergency.tracing_on, sizeof(emergency.tracing_on), instance_ + "/tracing_on");
	copy(emergency.events_enable, sizeof(emergency.events_enable), instance_ + "/events/enable");
	copy(emergency.instance, sizeof(emergency.instance), instance_);
	copy(emergency.kprobe_events, sizeof(emergency.kprobe_events), kprobe_events);
	emergency.n = 0;
	if (emergency_armed)
		return;
	for (int i = 0; i < 3; i++) {
		struct sigaction now{};
		sigaction(fatal_signals[i], nullptr, &previous[i]);
		if (previous[i].sa_handler != SIG_DFL)
			continue;	// someone else handles it
		now.sa_handler = emergency_cleanup;
		sigemptyset(&now.sa_mask);
		sigaction(fatal_signals[i], &now, nullptr);
	}
	emergency_armed = true;
}

// The first of the spec's symbols this kernel lets us probe.
probe_status trace_session::place_probe(const probe_spec &spec, const std::string &kprobe_events)
{
	probe_status st{spec.role, "", false, spec.what};
	std::string tried;
	for (const char *sym : spec.symbols) {
		const std::string event = group_ + "/" + spec.role;
		const std::string head = std::string(spec.ret ? "r" : "p") + ":" + event + " " + sym;
		int err = 0;
		// $argN needs CONFIG_HAVE_FUNCTION_ARG_ACCESS_API: without it, the bare probe.
		bool ok = write_file(kprobe_events, head + " " + spec.args, true, &err);
		if (!ok && err == EINVAL)
			ok = write_file(kprobe_events, head, true, &err);
		if (ok) {
			st.symbol = sym;
			st.placed = true;
			placed_events_.push_back(event);
			if (emergency.n < 16)
				copy(emergency.removals[emergency.n++], sizeof(emergency.removals[0]), "-:" + event);
			return st;
		}
		tried += (tried.empty() ? "" : ", ") + std::string(sym) + " " + errno_symbol(err);
	}
	st.note = "skipped: not probe-able on this kernel (" + tried +
		  "): inlined, renamed, or its module is not loaded";
	return st;
}

// Our probes and the migrate: tracepoints, in our instance only.
void trace_session::enable_events()
{
	if (!placed_events_.empty()) {
		int err = 0;
		if (!write(instance_ + "/events/" + group_ + "/enable", "1", &err))
			notes_.push_back("cannot enable the probes in our instance: " + errno_text(err));
	}
	for (const char *tp : tracepoints) {
		int err = 0;
		if (write(instance_ + "/events/" + tp + "/enable", "1", &err))
			tracepoints_.push_back(tp);
		else
			notes_.push_back(std::string("tracepoint ") + tp + " skipped: " + errno_text(err));
	}
}

trace_session::~trace_session()
{
	stop();
}

void trace_session::stop()
{
	if (stopped_ || getpid() != owner_)
		return;	// a forked child must not tear down its parent's session
	stopped_ = true;
	if (!instance_.empty()) {
		write(instance_ + "/tracing_on", "0");
		write(instance_ + "/events/enable", "0");
		if (!remove_instance(instance_.c_str()))
			notes_.push_back("could not remove " + instance_ + ": " + errno_text(errno));
	}
	const std::string kprobe_events = tracefs_ + "/kprobe_events";
	for (const auto &e : placed_events_)
		remove_probe(kprobe_events.c_str(), ("-:" + e).c_str());
	if (!placed_events_.empty()) {
		// Check: nothing of ours may stay behind.
		const std::string left = read_text_file(kprobe_events);
		if (left.find(group_ + "/") != std::string::npos)
			notes_.push_back("some probes of group " + group_ + " could not be removed");
	}
	placed_events_.clear();
	if (emergency_armed && emergency.owner == owner_) {
		for (int i = 0; i < 3; i++) {
			struct sigaction now{};
			sigaction(fatal_signals[i], nullptr, &now);
			if (now.sa_handler == emergency_cleanup)
				sigaction(fatal_signals[i], &previous[i], nullptr);
		}
		emergency_armed = false;
		emergency.owner = 0;
	}
}

std::vector<std::string> trace_session::missing_roles() const
{
	std::vector<std::string> out;
	for (const auto &p : probes_)
		if (!p.placed)
			out.push_back(p.role);
	return out;
}

json trace_session::describe() const
{
	json probes = json::array();
	for (const auto &p : probes_) {
		json j = {{"role", p.role}, {"placed", p.placed}, {"note", p.note}};
		if (!p.symbol.empty())
			j["symbol"] = p.symbol;
		probes.push_back(j);
	}
	json j = {{"available", available_},
		  {"tracefs", tracefs_},
		  {"instance", instance_},
		  {"probe_group", group_},
		  {"probes", probes},
		  {"tracepoints", tracepoints_},
		  {"swp_pfn_bits", swp_pfn_bits_}};
	if (!notes_.empty())
		j["notes"] = notes_;
	if (!cleaned_.empty())
		j["removed_leftovers"] = cleaned_;
	return j;
}

void trace_session::follow(pid_t pid)
{
	if (!available_)
		return;
	// The pid list grows with every fork of a followed process
	// (event-fork): set once, it covers all the run's case processes.
	write(instance_ + "/set_event_pid", std::to_string(pid));
	write(instance_ + "/options/event-fork", "1");
	write(instance_ + "/tracing_on", "1");
}

std::string trace_session::take() const
{
	std::string text;
	if (!available_)
		return text;
	// A consuming read: what was taken is gone, so the next case starts
	// empty without resetting the buffer (a reset waits for RCU).
	unique_fd fd(::open((instance_ + "/trace_pipe").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
	if (!fd)
		return text;
	char buf[65536];
	for (;;) {
		ssize_t n = ::read(fd.get(), buf, sizeof(buf));
		if (n <= 0)
			break;
		text.append(buf, size_t(n));
	}
	return text;
}

int trace_session::open_pipe() const
{
	if (!available_)
		return -1;
	return ::open((instance_ + "/trace_pipe").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
}

void trace_session::mark(const std::string &text) const
{
	if (available_)
		write_file(instance_ + "/trace_marker", text, false, nullptr);
}

} // namespace pinmatrix
