// SPDX-License-Identifier: GPL-2.0
#include "tracefs.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

// libtracefs 1.6's tracefs.h is C: its inline tracefs_hist_start() passes 0
// for an enum, which C++ refuses. An int overload, declared before the
// header, takes that call and hands it on.
struct tracefs_instance;
struct tracefs_hist;
static int tracefs_hist_command(struct tracefs_instance *instance, struct tracefs_hist *hist, int command);
extern "C" {
#include <tracefs.h>
}
static int tracefs_hist_command(struct tracefs_instance *instance, struct tracefs_hist *hist, int command)
{
	return tracefs_hist_command(instance, hist, static_cast<enum tracefs_hist_command>(command));
}

#include "kernel_info.hpp"
#include "sys_error.hpp"
#include "text.hpp"
#include "unique_fd.hpp"

namespace pinmatrix {

using nlohmann::json;

void tracefs_instance_deleter::operator()(struct tracefs_instance *instance) const
{
	tracefs_instance_free(instance);
}

void tracefs_dynevent_deleter::operator()(struct tracefs_dynevent *event) const
{
	tracefs_dynevent_free(event);
}

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

struct tracepoint {
	const char *system, *event;
};
const tracepoint tracepoints[] = {{"migrate", "mm_migrate_pages_start"},
				  {"migrate", "mm_migrate_pages"},
				  {"migrate", "set_migration_pte"},
				  {"migrate", "remove_migration_pte"}};

// What libtracefs hands out, freed its way.
struct name_list_deleter {
	void operator()(char **list) const { tracefs_list_free(list); }
};
using name_list = std::unique_ptr<char *, name_list_deleter>;
struct dynevent_list_deleter {
	void operator()(struct tracefs_dynevent **list) const { tracefs_dynevent_list_free(list); }
};
using dynevent_list = std::unique_ptr<struct tracefs_dynevent *, dynevent_list_deleter>;
using instance_ptr = std::unique_ptr<struct tracefs_instance, tracefs_instance_deleter>;
using dynevent_ptr = std::unique_ptr<struct tracefs_dynevent, tracefs_dynevent_deleter>;

// Our kprobes (p: and r:), the only kind this session places.
constexpr unsigned kprobe_types = TRACEFS_DYNEVENT_KPROBE | TRACEFS_DYNEVENT_KRETPROBE;

bool pid_alive(pid_t pid)
{
	if (kill(pid, 0) && errno == ESRCH)
		return false;
	// A reused pid of another program does not keep our leftovers alive.
	std::string comm = read_text_file("/proc/" + std::to_string(pid) + "/comm");
	return comm.rfind("pinmatrix", 0) == 0;
}

// The owner of a leftover "pinmatrix-<pid>" or "pinmatrix_<pid>", if it is gone.
bool owner_gone(const std::string &name)
{
	const pid_t pid = std::atoi(name.c_str() + 10);
	return pid > 0 && !pid_alive(pid);
}

// "group/event" of a dynamic event.
std::string dynevent_name(struct tracefs_dynevent *event)
{
	char *system = nullptr, *name = nullptr;
	tracefs_dynevent_info(event, &system, &name, nullptr, nullptr, nullptr);
	std::string text = std::string(system ? system : "") + "/" + (name ? name : "");
	std::free(system);
	std::free(name);
	return text;
}

dynevent_ptr alloc_probe(const probe_spec &spec, const std::string &group, const char *symbol, const char *args)
{
	return dynevent_ptr(spec.ret ? tracefs_kretprobe_alloc(group.c_str(), spec.role, symbol, args, 0)
				     : tracefs_kprobe_alloc(group.c_str(), spec.role, symbol, args));
}

// 0, or the errno of the kernel's refusal.
int create_probe(struct tracefs_dynevent *event)
{
	if (!event)
		return errno ? errno : ENOMEM;
	errno = 0;
	if (!tracefs_dynevent_create(event))
		return 0;
	return errno ? errno : EIO;
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
	// trace_pipe descriptors handed out by open_pipe(): closed first.
	int pipes[4] = {-1, -1, -1, -1};
};
emergency_plan emergency;
bool emergency_armed = false;
struct sigaction previous[3];
const int fatal_signals[3] = {SIGINT, SIGTERM, SIGHUP};

// The fatal signals held back while this process opens and closes its
// instance's files: the emergency cleanup cannot remove an instance that
// the code it interrupted holds a file of open (rmdir: EBUSY for as long
// as the process lives). The signal comes as soon as the file is closed.
class fatal_signals_held {
public:
	fatal_signals_held()
	{
		sigset_t set;
		sigemptyset(&set);
		for (int sig : fatal_signals)
			sigaddset(&set, sig);
		pthread_sigmask(SIG_BLOCK, &set, &old_);
	}
	~fatal_signals_held() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
	fatal_signals_held(const fatal_signals_held &) = delete;
	fatal_signals_held &operator=(const fatal_signals_held &) = delete;

private:
	sigset_t old_;
};

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
		for (int fd : emergency.pipes)
			if (fd >= 0)
				::close(fd);
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
	// Only a tracefs that is mounted already: libtracefs would mount one.
	const char *path = nullptr;
	if (tracefs_tracing_dir_is_mounted(false, &path) <= 0 || !path)
		return std::nullopt;
	if (!tracefs_dir_exists(nullptr, "instances"))
		return std::nullopt;
	return std::string(path);
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
	// Failures are the notes' to tell, not libtracefs's lines on stderr.
	tracefs_set_loglevel(TEP_LOG_NONE);
	try {
		fatal_signals_held held;
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
		remove_dead_probes();
	create_instance();
	arm_emergency_cleanup();
	if (!have_kprobes)
		notes_.push_back("no kprobe events here (" + kprobe_events +
				 " absent or not writable: CONFIG_KPROBE_EVENTS, or not root): only the "
				 "migrate: tracepoints are traced");
	for (const auto &spec : specs)
		probes_.push_back(have_kprobes ? place_probe(spec) : probe_status{spec.role, "", false, "no kprobe events"});
	enable_events();
	available_ = !placed_.empty() || !tracepoints_.empty();
	if (!available_)
		notes_.push_back("kernel trace unavailable: no probe and no tracepoint could be enabled");
}

// Leftovers of runs that were killed: their instance (its pid is gone).
void trace_session::remove_dead_instances()
{
	// A POSIX basic regex (regcomp without REG_EXTENDED): no "+".
	name_list names(tracefs_instances("^pinmatrix-[0-9][0-9]*$"));
	for (char **n = names.get(); n && *n; n++) {
		if (!owner_gone(*n))
			continue;
		instance_ptr dead(tracefs_instance_alloc(nullptr, *n));
		if (!dead)
			continue;
		tracefs_trace_off(dead.get());
		tracefs_event_disable(dead.get(), nullptr, nullptr);
		if (!tracefs_instance_destroy(dead.get()))
			cleaned_.push_back("instance " + std::string(*n));
	}
}

// ... and their probes (group pinmatrix_<pid>).
void trace_session::remove_dead_probes()
{
	dynevent_list all(tracefs_dynevent_get_all(kprobe_types, nullptr));
	for (struct tracefs_dynevent **e = all.get(); e && *e; e++) {
		const std::string name = dynevent_name(*e);
		if (name.rfind("pinmatrix_", 0) != 0 || !owner_gone(name))
			continue;
		if (!tracefs_dynevent_destroy(*e, true))
			cleaned_.push_back("probe " + name);
	}
}

void trace_session::create_instance()
{
	const std::string name = "pinmatrix-" + std::to_string(owner_);
	group_ = "pinmatrix_" + std::to_string(owner_);
	inst_.reset(tracefs_instance_create(name.c_str()));
	if (!inst_)
		throw std::runtime_error("cannot create a tracefs instance: " + errno_text(errno));
	instance_ = tracefs_ + "/instances/" + name;
	tracefs_trace_off(inst_.get());
}

// Disarmed in stop(); children of fork() inherit it and do nothing.
void trace_session::arm_emergency_cleanup() const
{
	emergency.owner = owner_;
	copy(emergency.tracing_on, sizeof(emergency.tracing_on), instance_ + "/tracing_on");
	copy(emergency.events_enable, sizeof(emergency.events_enable), instance_ + "/events/enable");
	copy(emergency.instance, sizeof(emergency.instance), instance_);
	copy(emergency.kprobe_events, sizeof(emergency.kprobe_events), tracefs_ + "/kprobe_events");
	emergency.n = 0;
	for (int &fd : emergency.pipes)
		fd = -1;
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
probe_status trace_session::place_probe(const probe_spec &spec)
{
	probe_status st{spec.role, "", false, spec.what};
	std::vector<std::string> tried;
	for (const char *sym : spec.symbols) {
		dynevent_ptr event = alloc_probe(spec, group_, sym, spec.args);
		int err = create_probe(event.get());
		// $argN needs CONFIG_HAVE_FUNCTION_ARG_ACCESS_API: without it, the bare probe.
		if (err == EINVAL) {
			event = alloc_probe(spec, group_, sym, nullptr);
			err = create_probe(event.get());
		}
		if (!err) {
			st.symbol = sym;
			st.placed = true;
			if (emergency.n < 16)
				copy(emergency.removals[emergency.n++], sizeof(emergency.removals[0]),
				     "-:" + group_ + "/" + spec.role);
			placed_.push_back(std::move(event));
			return st;
		}
		tried.push_back(std::string(sym) + " " + errno_symbol(err));
	}
	st.note = "skipped: not probe-able on this kernel (" + join(tried, ", ") +
		  "): inlined, renamed, or its module is not loaded";
	return st;
}

// Our probes and the migrate: tracepoints, in our instance only.
void trace_session::enable_events()
{
	if (!placed_.empty() && tracefs_event_enable(inst_.get(), group_.c_str(), nullptr))
		notes_.push_back("cannot enable the probes in our instance: " + errno_text(errno));
	for (const auto &tp : tracepoints) {
		const std::string name = std::string(tp.system) + "/" + tp.event;
		if (!tracefs_event_file_exists(inst_.get(), tp.system, tp.event, "enable"))
			notes_.push_back("tracepoint " + name + " skipped: not in this kernel");
		else if (tracefs_event_enable(inst_.get(), tp.system, tp.event))
			notes_.push_back("tracepoint " + name + " skipped: " + errno_text(errno));
		else
			tracepoints_.push_back(name);
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
	fatal_signals_held held;
	stopped_ = true;
	if (inst_) {
		tracefs_trace_off(inst_.get());
		tracefs_event_disable(inst_.get(), nullptr, nullptr);
		if (!remove_when_not_busy([this] { return !tracefs_instance_destroy(inst_.get()); }))
			notes_.push_back("could not remove " + instance_ + ": " + errno_text(errno));
		inst_.reset();
	}
	remove_probes();
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

void trace_session::remove_probes()
{
	if (placed_.empty())
		return;
	for (const auto &e : placed_)
		remove_when_not_busy([&e] { return !tracefs_dynevent_destroy(e.get(), false); });
	placed_.clear();
	// Check: nothing of ours may stay behind.
	dynevent_list left(tracefs_dynevent_get_all(kprobe_types, group_.c_str()));
	if (left && *left)
		notes_.push_back("some probes of group " + group_ + " could not be removed");
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
	fatal_signals_held held;
	// The pid list grows with every fork of a followed process
	// (event-fork): set once, it covers all the run's case processes.
	tracefs_instance_file_write(inst_.get(), "set_event_pid", std::to_string(pid).c_str());
	tracefs_option_enable(inst_.get(), TRACEFS_OPTION_EVENT_FORK);
	tracefs_trace_on(inst_.get());
}

std::string trace_session::take() const
{
	std::string text;
	fatal_signals_held held;
	// A consuming read: what was taken is gone, so the next case starts
	// empty without resetting the buffer (a reset waits for RCU).
	unique_fd fd(open_instance_pipe());
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

int trace_session::open_instance_pipe() const
{
	if (!available_)
		return -1;
	return tracefs_instance_file_open(inst_.get(), "trace_pipe", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
}

int trace_session::open_pipe() const
{
	fatal_signals_held held;
	const int fd = open_instance_pipe();
	// The caller may hold it to the end: a fatal signal's cleanup closes
	// it before it removes the instance.
	if (fd >= 0 && getpid() == emergency.owner)
		for (int &slot : emergency.pipes)
			if (slot < 0) {
				slot = fd;
				break;
			}
	return fd;
}

void trace_session::mark(const std::string &text) const
{
	if (!available_)
		return;
	fatal_signals_held held;
	tracefs_instance_file_write(inst_.get(), "trace_marker", text.c_str());
}

} // namespace pinmatrix
