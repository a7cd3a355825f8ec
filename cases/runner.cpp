// SPDX-License-Identifier: GPL-2.0
#include "runner.hpp"

#include <algorithm>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "atomic_file.hpp"
#include "child_process.hpp"
#include "kernel_info.hpp"
#include "kernel_log.hpp"
#include "known_bugs.hpp"
#include "ktap.hpp"
#include "pin_balance.hpp"
#include "pin_module.hpp"
#include "placement.hpp"
#include "pin/plan.hpp"
#include "reports.hpp"
#include "results.hpp"
#include "step_clock.hpp"
#include "common/running_kernel.hpp"
#include "terminal_table.hpp"
#include "suite.hpp"
#include "user_input.hpp"
#include "sys_error.hpp"
#include "text.hpp"
#include "unique_fd.hpp"

namespace pinmatrix {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string now_iso8601()
{
	char buf[64];
	std::time_t t = std::time(nullptr);
	std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
	return buf;
}

// `modprobe -q NAME`, no shell: true when the module is now loaded.
bool modprobe(const char *name)
{
	for (const char *bin : {"/usr/sbin/modprobe", "/sbin/modprobe"}) {
		if (access(bin, X_OK))
			continue;
		char *const argv[] = {const_cast<char *>("modprobe"), const_cast<char *>("-q"), const_cast<char *>(name),
				      nullptr};
		pid_t pid;
		if (posix_spawn(&pid, bin, nullptr, nullptr, argv, environ))
			return false;
		int status = 0;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		return WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	return false;
}

// Loads pinmatrix.ko when /dev/pinmatrix is absent, and unloads it when
// done: --module's file, or else the node's own, as `modprobe` finds it
// (the pinmatrix-dkms package installs it for each kernel under
// /lib/modules/RELEASE/updates/dkms). Neither: the cases that need the
// module SKIP, saying which package to install.
class module_loader {
public:
	module_loader(const std::optional<fs::path> &ko, bool wanted)
	{
		if (!wanted || fs::exists(default_device_path))
			return;
		if (ko) {
			unique_fd fd(::open(ko->c_str(), O_RDONLY | O_CLOEXEC));
			if (!fd)
				throw last_sys_error("open " + ko->string());
			if (syscall(SYS_finit_module, fd.get(), "", 0) && errno != EEXIST)
				throw last_sys_error("finit_module " + ko->string());
			from_ = ko->string();
		} else if (modprobe("pinmatrix")) {
			from_ = "modprobe pinmatrix";
		} else {
			return;
		}
		// devtmpfs creates the node asynchronously after misc_register().
		for (int i = 0; i < 100 && !fs::exists(default_device_path); i++)
			usleep(10'000);
	}
	module_loader(const module_loader &) = delete;
	module_loader &operator=(const module_loader &) = delete;
	~module_loader()
	{
		if (loaded())
			syscall(SYS_delete_module, "pinmatrix", O_NONBLOCK);
	}
	bool loaded() const { return !from_.empty(); }
	// The file, or "modprobe pinmatrix"; empty when this run loaded nothing.
	const std::string &loaded_from() const { return from_; }

private:
	std::string from_;
};

// The module's fault knobs, each set for the one case --fault names: a
// first pin through /dev/pinmatrix that misbehaves in the kernel.
struct kernel_knob {
	const char *kind;		// --fault KIND=CASE
	std::string fault_plan::*at;
	const char *param;
	const char *says;		// "case B" + says
};
const kernel_knob kernel_knobs[] = {
	{"kernel-hang-at", &fault_plan::kernel_hang_at, "/sys/module/pinmatrix/parameters/stall_pin_until_killed",
	 "'s pin stalls in the kernel until killed"},
	{"kernel-hang-in-thread-at", &fault_plan::kernel_hang_in_thread_at,
	 "/sys/module/pinmatrix/parameters/stall_pin_until_killed",
	 "'s pin stalls in the kernel, in a thread of its own, until killed"},
	{"kernel-spin-at", &fault_plan::kernel_spin_at, "/sys/module/pinmatrix/parameters/spin_pin_until_killed",
	 "'s pin spins in the kernel until killed"},
	{"kernel-oops-at", &fault_plan::kernel_oops_at, "/sys/module/pinmatrix/parameters/oops_in_pin",
	 "'s pin oopses in the kernel with a lock held; every later pin waits on it"},
	{"kernel-leak-pin-at", &fault_plan::kernel_leak_pin_at, "/sys/module/pinmatrix/parameters/leak_pins",
	 "'s pin is never given back: the module keeps its pages pinned (until reboot)"},
};

const kernel_knob *knob_of(const std::string &kind)
{
	for (const auto &k : kernel_knobs)
		if (kind == k.kind)
			return &k;
	return nullptr;
}

// A module parameter set for one case; the old value is put back after it.
class module_param_override {
public:
	module_param_override(fs::path param, const std::string &value) : param_(std::move(param))
	{
		old_ = trimmed(read_text_file(param_.string()));
		set(value);
	}
	module_param_override(const module_param_override &) = delete;
	module_param_override &operator=(const module_param_override &) = delete;
	~module_param_override()
	{
		try {
			set(old_);
		} catch (const std::exception &e) {
			std::cerr << "pinmatrix: warning: " << e.what() << std::endl;
		}
	}

private:
	void set(const std::string &value)
	{
		std::ofstream f(param_);
		f << value << std::flush;
		if (!f)
			throw last_sys_error("write " + param_.string());
	}
	fs::path param_;
	std::string old_;
};

json vmstat_pins()
{
	auto v = read_vmstat();
	return {{"nr_foll_pin_acquired", v["nr_foll_pin_acquired"]},
		{"nr_foll_pin_released", v["nr_foll_pin_released"]}};
}

std::string read_or_empty(const std::string &path)
{
	try {
		return read_text_file(path);
	} catch (const std::exception &) {
		return "";
	}
}

const char *const kmsg_path = "/dev/kmsg";

// A dump the runner asks the kernel for (sysrq KEY; writing the trigger
// works whatever kernel.sysrq says), marked so that its stack dumps are not
// taken for kernel bugs (kernel_log.hpp): the log records it added, or
// nullopt without /dev/kmsg or /proc/sysrq-trigger.
std::optional<std::vector<std::string>> requested_dump(char key, pid_t pid)
{
	std::optional<kernel_log_cursor> klog;
	try {
		klog.emplace();
	} catch (const std::exception &) {
	}
	std::ofstream(kmsg_path) << requested_dump_begins << " (sysrq " << key << ", pid " << pid << ")"
				 << std::flush;
	std::ofstream trigger("/proc/sysrq-trigger");
	trigger << key << std::flush;
	std::ofstream(kmsg_path) << requested_dump_ends << std::flush;
	if (!klog || !trigger)
		return std::nullopt;
	return klog->new_records();
}

// The block of a dump about `pid`: from a line starting with `head` whose
// own or next line matches `names_pid`, up to the next such head or the
// end of its call trace ("</TASK>"); empty when the dump has none.
json dump_block(const std::vector<std::string> &log, const std::string &head, const std::regex &names_pid)
{
	json lines = json::array();
	for (size_t i = 0; i < log.size(); i++) {
		if (log[i].rfind(head, 0) != 0 ||
		    !(std::regex_search(log[i], names_pid) ||
		      (i + 1 < log.size() && std::regex_search(log[i + 1], names_pid))))
			continue;
		for (size_t j = i; j < log.size() && lines.size() < 80; j++) {
			if (j > i && log[j].rfind(head, 0) == 0)
				break;
			lines.push_back(log[j]);
			if (log[j].find("</TASK>") != std::string::npos)
				break;
		}
		break;
	}
	return lines;
}

// A sleeping task's (or thread's) kernel stack, its frames without their
// "[<0>] " prefix.
json kernel_stack(pid_t tid)
{
	json stack = json::array();
	std::istringstream st(read_or_empty("/proc/" + std::to_string(tid) + "/stack"));
	for (std::string l; std::getline(st, l);)
		stack.push_back(l.substr(l.find(']') == std::string::npos ? 0 : l.find(']') + 2));
	return stack;
}

// A task asleep in the kernel: its kernel stack and its entry in the dump
// of blocked tasks (sysrq 'w': "task:COMM state:D stack:N pid:PID ...").
// A task that wakes now and then inside the kernel (a retry loop that
// sleeps between passes) can be runnable at one dump and asleep at the
// next: up to three dumps, 300 ms apart, until one lists it.
void sleeping_task_evidence(pid_t pid, json &e)
{
	e["kernel_stack"] = kernel_stack(pid);
	const std::regex pid_field("(^|\\s)pid:" + std::to_string(pid) + "(\\s|$)");
	json lines = json::array();
	int dumps = 0;
	for (; dumps < 3 && lines.empty(); dumps++) {
		if (dumps)
			std::this_thread::sleep_for(std::chrono::milliseconds(300));
		const auto log = requested_dump('w', pid);
		if (!log) {
			e["task_dump"] = {{"trigger", "sysrq w"}, {"note", "no /dev/kmsg or /proc/sysrq-trigger"}};
			return;
		}
		lines = dump_block(*log, "task:", pid_field);
	}
	e["task_dump"] = {{"trigger", "sysrq w: tasks in uninterruptible sleep"}, {"lines", lines}, {"dumps", dumps}};
	if (lines.empty())
		e["task_dump"]["note"] = "the task is in none of 3 dumps: it was not blocked in the kernel";
}

// A task running in the kernel (state R: a loop that never sleeps). Its
// stack is not read from /proc/PID/stack: unwinding a runnable task from
// another makes the kernel warn where a kretprobe (this suite's traces)
// sits on that stack (rethook_find_ret_addr), and what it gives is stale.
// The CPU that runs it unwinds itself instead: sysrq 'l', the active
// CPUs' backtraces ("NMI backtrace for cpu N", then "CPU: N ... PID: PID").
void running_task_evidence(pid_t pid, json &e)
{
	e["kernel_stack"] = json::array();
	e["kernel_stack_note"] = "not read: the task is running (unwinding it from another task is "
				 "unreliable and, under kretprobes, a kernel warning); see cpu_backtrace";
	const auto log = requested_dump('l', pid);
	if (!log) {
		e["cpu_backtrace"] = {{"trigger", "sysrq l"}, {"note", "no /dev/kmsg or /proc/sysrq-trigger"}};
		return;
	}
	const std::regex pid_field("(^|\\s)PID: " + std::to_string(pid) + "(\\s|$)");
	const json lines = dump_block(*log, "NMI backtrace for cpu", pid_field);
	e["cpu_backtrace"] = {{"trigger", "sysrq l: backtraces of the active CPUs"}, {"lines", lines}};
	static const std::regex rip("RIP: [0-9a-f]{4}:([A-Za-z0-9_.]+)\\+");
	for (const auto &l : lines)
		if (std::smatch m; std::regex_search(l.get_ref<const std::string &>(), m, rip)) {
			e["spins_at"] = m[1].str();
			return;
		}
	e["cpu_backtrace"]["note"] = "the task is in no CPU's kernel backtrace: on no CPU at the dump (with "
				     "one vCPU the runner is on it: --cpus 2), or in user space";
}

// Where a running thread spends its time: its CPU time over half a second
// while the runner sleeps (with one vCPU, that sleep is what lets it run).
// Safe under kretprobes, unlike unwinding it, and it sees a thread that the
// scheduler preempted (PREEMPT_LAZY) and no CPU's backtrace shows.
void cpu_time_evidence(pid_t tid, json &e)
{
	constexpr std::chrono::milliseconds window{500};
	const auto before = read_cpu_time(tid);
	std::this_thread::sleep_for(window);
	const auto after = read_cpu_time(tid);
	if (!before || !after)
		return;
	e["cpu_time"] = {{"over_ms", window.count()},
			 {"user_ms", (after->user - before->user).count()},
			 {"system_ms", (after->system - before->system).count()}};
}

// The threads of a case's process, its main one first: each one's state.
std::vector<std::pair<pid_t, task_state>> case_threads(pid_t pid)
{
	std::vector<std::pair<pid_t, task_state>> out{{pid, read_task_state(pid)}};
	std::error_code ec;
	for (const auto &e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
		const pid_t tid = pid_t(std::atoi(e.path().filename().c_str()));
		if (tid > 0 && tid != pid && out.size() < 64)
			out.push_back({tid, read_task_state(tid)});
	}
	return out;
}

// The thread a case is stuck in: the first that runs (R) or sleeps
// uninterruptibly (D) in the kernel, else its main one (which may only be
// waiting for another, in a futex).
pid_t stuck_thread(const std::vector<std::pair<pid_t, task_state>> &threads)
{
	for (const char *state : {"D", "R"})
		for (const auto &[tid, t] : threads)
			if (t.state == state)
				return tid;
	return threads.front().first;
}

// One thread of the case, in a line of evidence: its state, where it
// waits, and (asleep) its kernel stack.
json thread_json(pid_t tid, const task_state &t)
{
	json j = {{"tid", tid}, {"state", t.state}, {"wchan", t.wchan}};
	if (t.state != "R")
		j["kernel_stack"] = kernel_stack(tid);
	return j;
}

// What a case's process was doing when its time ran out: every thread's
// state, and for the one stuck in the kernel where it sleeps or spins and
// the kernel's own dump of it.
json stuck_task_evidence(pid_t pid)
{
	const auto threads = case_threads(pid);
	const pid_t tid = stuck_thread(threads);
	json e = {{"pid", pid}, {"tid", tid}};
	const task_state t = read_task_state(tid);
	if (!t.state.empty())
		e["state"] = t.state;
	e["wchan"] = t.wchan;
	if (e.value("state", "?") == "R") {
		cpu_time_evidence(tid, e);
		running_task_evidence(tid, e);
	} else
		sleeping_task_evidence(tid, e);
	json all = json::array();
	for (const auto &[id, state] : threads)
		all.push_back(thread_json(id, state));
	e["threads"] = all;
	return e;
}

} // namespace

bool runs_in_the_kernel(const json &stuck)
{
	if (stuck.value("state", "") != "R" || !stuck.contains("cpu_time"))
		return false;
	const json &t = stuck["cpu_time"];
	return t.value("system_ms", 0) > 0 && t.value("user_ms", -1) == 0;
}

namespace {

// How a running thread used its time, for the reason.
std::string cpu_time_text(const json &e)
{
	if (!e.contains("cpu_time"))
		return "";
	const json &t = e["cpu_time"];
	return "; " + std::to_string(t.value("system_ms", 0)) + " ms in the kernel and " +
	       std::to_string(t.value("user_ms", 0)) + " ms in user space of the last " +
	       std::to_string(t.value("over_ms", 0)) + " ms";
}

// One line for the reason: where the process was stuck, and in which
// thread when not its main one.
std::string where_stuck(const json &e)
{
	const std::string state = e.value("state", "?");
	const std::string wchan = e.value("wchan", "");
	const pid_t pid = e.value("pid", 0), tid = e.value("tid", pid);
	const std::string thread = tid == pid ? "" : "thread " + std::to_string(tid) + " (of " +
				   std::to_string(e.value("threads", json::array()).size()) + ") ";
	if (state == "D")
		return thread + "stuck in the kernel at " + (wchan.empty() || wchan == "0" ? "?" : wchan) +
		       " (state D; task dump in stuck_task)";
	if (state == "R")
		return thread + "running, " +
		       (e.contains("spins_at")
				? "spinning at " + e["spins_at"].get<std::string>() + " (state R; CPU backtrace in stuck_task" +
					  cpu_time_text(e) + ")"
				: "where is unknown (state R; in no CPU backtrace" + cpu_time_text(e) + ")");
	return thread + task_state{e.value("state", ""), wchan}.where();
}

// Runs one case in a child process, bounded by the case timeout. The child
// sends {"observation"|"skip"|"error"} on a pipe; its exit releases any pin
// it still held. At the timeout the child's state and kernel stack are kept
// before SIGKILL (a killable sleep in the kernel ends with it too).
// In the child: the case's body, its observation (or why it could not
// run) written to fd as JSON; then _exit.
// The case's body: its observation, or why it could not run.
json case_message(suite &s, const planned_case &c)
{
	try {
		return s.run_in_child(c);
	} catch (const unmet_need &e) {
		return {{"skip", e.what()}};
	} catch (const std::exception &e) {
		return {{"error", e.what()}};
	}
}

[[noreturn]] void case_child(suite &s, const planned_case &c, int fd, bool hang, bool in_thread)
{
	while (hang)
		pause();
	json msg;
	if (in_thread)
		std::thread([&] { msg = case_message(s, c); }).join();
	else
		msg = case_message(s, c);
	const std::string text = msg.dump();
	size_t off = 0;
	while (off < text.size()) {
		ssize_t n = write(fd, text.data() + off, text.size() - off);
		if (n <= 0)
			_exit(3);
		off += size_t(n);
	}
	_exit(0);
}

// The child's message judged: its SKIP, its error, or the suite's verdict.
case_record judge_message(suite &s, const planned_case &c, const std::string &msg, int status)
{
	if (WIFSIGNALED(status))
		return s.not_run(c, verdict::error, std::string("case process killed by signal ") + strsignal(WTERMSIG(status)));
	json j;
	try {
		j = json::parse(msg);
	} catch (const json::exception &) {
		return s.not_run(c, verdict::error,
				 "case process exited " + std::to_string(WEXITSTATUS(status)) + " without a result");
	}
	if (j.contains("skip"))
		return s.not_run(c, verdict::skip, j["skip"]);
	if (j.contains("error"))
		return s.not_run(c, verdict::error, j["error"]);
	try {
		return s.judge(c, j.at("observation"));
	} catch (const std::exception &e) {
		return s.not_run(c, verdict::error, std::string("unreadable observation: ") + e.what());
	}
}

// How long a case's process killed at its timeout may take to exit.
constexpr std::chrono::seconds killed_case_exit{10};

void reap(pid_t pid, int &status)
{
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

case_record run_in_child(suite &s, const planned_case &c, int timeout_s, bool hang, bool in_thread)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC))
		throw last_sys_error("pipe2");
	unique_fd rd(pipefd[0]), wr(pipefd[1]);
	std::cout.flush();
	pid_t pid = fork();
	if (pid < 0)
		throw last_sys_error("fork");
	if (pid == 0) {
		rd.reset();
		case_child(s, c, wr.get(), hang, in_thread);
	}
	wr.reset();
	// Until the child closes the pipe or exits: a helper it left behind
	// (a memory block's offlining stuck in the kernel past its SIGKILL)
	// may hold the pipe open long after.
	const auto msg = read_child_message(rd.get(), pid, std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s));
	int status = 0;
	if (msg) {
		if (msg->reaped)
			status = msg->status;
		else
			reap(pid, status);
		return judge_message(s, c, msg->text, status);
	}
	json stuck = stuck_task_evidence(pid);
	// The reports say it the way kselftest's runner does ("# TIMEOUT 60 seconds").
	stuck["timeout_s"] = timeout_s;
	kill(pid, SIGKILL);
	// A task asleep uninterruptibly (a lock a dead task held) outlives its
	// SIGKILL: the run does not wait for it.
	std::string killed = "killed";
	if (const auto left = reap_within(pid, status, killed_case_exit)) {
		stuck["left_running"] = *left;
		killed = "still there " + std::to_string(killed_case_exit.count()) + " s after SIGKILL (" + *left +
			 "): left running";
	}
	// Its pins went with it, also those of a pin stuck in the kernel.
	stuck["vmstat_after_kill"] = vmstat_pins();
	// A thread that ran in the kernel, and only there, to the end of the
	// case's time is a system call that never returns: the kernel failed
	// the case (a retry without end). Stuck anywhere else, the case
	// decided nothing.
	const bool never_returns = runs_in_the_kernel(stuck);
	case_record r = s.not_run(c, never_returns ? verdict::fail : verdict::error,
				  "case did not finish within " + std::to_string(timeout_s) + " s (" +
					  (never_returns ? "a system call that never returns: its thread runs in the kernel"
							 : "a registration that never returns?") +
					  "); " + killed + "; " + where_stuck(stuck));
	r.details["stuck_task"] = stuck;
	return r;
}

// A kernel bug report (KASAN, lockdep, a WARN ...) while the case ran fails
// it, whatever it observed: the kernel paths it drove are what is tested.
void note_kernel_alarms(case_record &r, const std::vector<std::string> &alarms)
{
	if (alarms.empty())
		return;
	r.details["kernel_alarms"] = alarms;
	const std::string what = "the kernel reported a bug during the case: " + alarms.front() +
				 (alarms.size() > 1 ? " (+" + std::to_string(alarms.size() - 1) + " more)" : "");
	if (r.outcome == verdict::pass || r.outcome == verdict::skip) {
		r.outcome = verdict::fail;
		r.reason = what;
	} else {
		r.add_reason(what);
	}
}

// The first kernel bug report of the run and the case it came in.
struct earlier_bug {
	std::string case_id, line;
};

// A case that timed out with no kernel report of its own names the run's
// first one: an oops earlier (in a debugfs read, say) leaves a lock held
// that every later user of it waits on.
void note_earlier_kernel_bug(case_record &r, const std::optional<earlier_bug> &bug)
{
	if (!bug || !r.details.contains("stuck_task") || r.details.contains("kernel_alarms"))
		return;
	r.details["earlier_kernel_bug"] = {{"case", bug->case_id}, {"line", bug->line}};
	r.add_reason("the kernel reported a bug earlier, during case " + bug->case_id + ": " + bug->line);
}

// A suite whose case's process is stuck in the kernel past its SIGKILL: its
// later cases would wait on the same; why, for their records.
std::optional<std::string> wedges_its_suite(const case_record &r)
{
	if (!r.details.contains("stuck_task") || !r.details["stuck_task"].contains("left_running"))
		return std::nullopt;
	return "not run: the process of case " + r.id + " is stuck in the kernel after SIGKILL (" +
	       r.details["stuck_task"]["left_running"].get<std::string>() +
	       "); this suite's later cases would wait on the same";
}

void panic_now(const std::string &id)
{
	std::cout << "pinmatrix: fault injection: kernel panic at case " << id << std::endl;
	sync();
	std::ofstream("/proc/sysrq-trigger") << 'c' << std::flush;
	pause();
}

} // namespace

placement restricted_placement(const std::string &spec)
{
	if (spec == "auto")
		return detect_restricted_placement();
	if (auto p = parse_placement(spec))
		return *p;
	throw usage_error("--placement '" + spec + "': expected auto, ordinary, movable or cma");
}

fault_plan parse_fault(const std::string &spec)
{
	fault_plan f;
	if (spec.empty())
		return f;
	const auto eq = spec.find('=');
	const std::string kind = spec.substr(0, eq);
	const std::string id = eq == std::string::npos ? "" : spec.substr(eq + 1);
	const kernel_knob *knob = knob_of(kind);
	if (kind != "panic-at" && kind != "hang-at" && !knob) {
		std::string kinds = "panic-at=CASE, hang-at=CASE";
		for (const auto &k : kernel_knobs)
			kinds += std::string(", ") + k.kind + "=CASE";
		throw usage_error("--fault '" + spec + "': expected one of " + kinds);
	}
	auto entry = select_plan(make_suites({}), {id});
	if (entry.size() != 1)
		throw usage_error("--fault '" + spec + "': name one case");
	const std::string &case_id = entry[0].c.id;
	if (knob) {
		// The stall is in the module's PIN: the case must take its first
		// pin through /dev/pinmatrix.
		const auto &defs = pin_cases();
		const auto it = std::find_if(defs.begin(), defs.end(),
					     [&](const case_def &d) { return d.id == case_id; });
		const bool module_pin = it != defs.end() && std::string(traits(it->first).source) == "module" &&
					(it->first == first_pin::gup_ref || it->first == first_pin::foll_pin ||
					 it->first == first_pin::foll_pin_longterm);
		if (!module_pin)
			throw usage_error("--fault '" + spec + "': case " + case_id +
					  " takes no pin through /dev/pinmatrix; name one that does (B, C, D)");
	}
	(knob ? f.*(knob->at) : kind == "panic-at" ? f.panic_at : f.hang_at) = case_id;
	return f;
}

namespace {

// The suites' options for this boot: its restricted placement, and whether
// it is there. "auto" on a boot with neither: plan A-C on ZONE_MOVABLE, they
// SKIP. Asked for by name, it must be there: a CMA area the kernel failed to
// reserve (CmaTotal 0) leaves nothing to find, and filling memory in search
// of it only ends in the OOM killer.
suite_options suites_for(const run_options &opt)
{
	suite_options so{opt.device, opt.find_budget_mib, restricted_placement(opt.placement)};
	so.pins = opt.pins;
	so.latency_samples = opt.latency_samples;
	check(opt.pins);
	if (opt.placement == "auto" && so.restricted == placement::ordinary) {
		so.restricted = placement::movable;
		so.restricted_present = false;
	}
	if (opt.placement != "auto" && so.restricted != placement::ordinary) {
		const auto present = restricted_placements();
		so.restricted_present = std::find(present.begin(), present.end(), so.restricted) != present.end();
	}
	return so;
}

// The run's record as it starts: the plan, the kernel, memlock, vmstat.
json run_doc(const std::vector<plan_entry> &plan, const kernel_info &kernel)
{
	json doc = {{"schema", results_schema},
		    {"tool", tool_json()},
		    {"kernel", {{"release", kernel.release}, {"version", kernel.version},
				{"machine", kernel.machine}, {"cmdline", kernel.cmdline}}},
		    {"started_at", now_iso8601()},
		    {"complete", false},
		    {"plan", json::array()},
		    {"cases", json::array()}};
	for (const auto &e : plan)
		doc["plan"].push_back(e.c.id);
	const auto memlock = read_memlock_info();
	doc["memlock"] = {{"limit_bytes", memlock.limit_bytes ? json(*memlock.limit_bytes) : json("unlimited")},
			  {"cap_ipc_lock", memlock.cap_ipc_lock}};
	doc["vmstat_before"] = vmstat_pins();
	// How long the kernel lets a CPU go silent before it reports a stall
	// or a soft lockup (a report fails the run): null where unknown.
	auto seconds = [](const char *file) {
		const auto n = read_number_file(file);
		return n ? json(*n) : json(nullptr);
	};
	doc["kernel"]["stall_detectors"] = {
		{"rcu_cpu_stall_timeout_s", seconds("/sys/module/rcupdate/parameters/rcu_cpu_stall_timeout")},
		{"watchdog_thresh_s", seconds("/proc/sys/kernel/watchdog_thresh")}};
	return doc;
}

// results.json is replaced only by a whole new one. When one cannot be
// written (a full disk), the error names the case, the file keeps the
// cases written before, the run goes on (a later write may fit) and
// exits 1 however the cases went.
class results_keeper {
public:
	explicit results_keeper(fs::path file) : file_(std::move(file)) {}

	void keep(const json &doc, const std::string &when)
	{
		if (file_.empty())
			return;
		try {
			// The end's document is made whole again: a suite's finish
			// may have added to a record.
			write_file_atomically(file_, doc.value("complete", false) ? results_json_text(doc) : text_.of(doc));
			written_ = doc["cases"].size();
		} catch (const std::exception &e) {
			all_written_ = false;
			std::cerr << "pinmatrix: ERROR: " << when << ": results.json not updated: " << e.what()
				  << "; it keeps the " << written_ << " case(s) written before" << std::endl;
		}
	}
	void failed() { all_written_ = false; }
	bool all_written() const { return all_written_; }
	size_t written() const { return written_; }
	const fs::path &file() const { return file_; }

private:
	fs::path file_;
	results_text text_;	// the cases' records do not change once kept
	bool all_written_ = true;
	size_t written_ = 0;
};

// Preflight, LTP style: an unmet need turns a suite's cases into SKIPs.
std::map<const suite *, std::optional<std::string>> preflight_suites(const std::vector<std::unique_ptr<suite>> &suites,
								     const std::vector<plan_entry> &plan, json &doc)
{
	std::map<const suite *, std::optional<std::string>> cannot_run;
	for (const auto &s : suites)
		if (std::any_of(plan.begin(), plan.end(), [&](const plan_entry &e) { return e.owner == s.get(); }))
			cannot_run[s.get()] = s->preflight(doc);
	return cannot_run;
}

// What the run learns from its cases as they go: the kernel's log, its
// first bug report, the suites that a process stuck in the kernel wedged.
struct run_state {
	std::optional<kernel_log_cursor> klog;
	std::optional<earlier_bug> first_bug;
	std::map<const suite *, std::string> wedged;
	// The pins each case leaves behind (pin_balance.hpp).
	pin_balance balance{foll_pins_held, quiet_machine()};
	// Where the run's time goes besides its cases (results.json's time_ms).
	step_clock &clock;
};

// One case: its knob of fault injection set around it, run in a child (or
// its SKIP), timed, and the kernel's alarms during it noted.
case_record run_one(const plan_entry &e, const std::optional<std::string> &why_not, const fault_plan &fault,
		    const run_options &opt, run_state &st, json &doc)
{
	auto &[owner, c] = e;
	if (!why_not)
		owner->before_case(c, doc);
	st.clock.mark("placement fills before cases");
	const std::string started_at = now_iso8601();
	const auto t0 = std::chrono::steady_clock::now();
	std::optional<module_param_override> stall;
	for (const auto &k : kernel_knobs)
		if (c.id == fault.*(k.at) && !why_not) {
			std::cout << "pinmatrix: fault injection: case " << c.id << k.says << std::endl;
			stall.emplace(k.param, "Y");
		}
	if (!why_not)
		st.balance.before_case();
	case_record r = why_not ? owner->not_run(c, verdict::skip, *why_not)
				: run_in_child(*owner, c, opt.case_timeout_s, c.id == fault.hang_at,
					       c.id == fault.kernel_hang_in_thread_at);
	stall.reset();
	if (!why_not)
		st.balance.after_case(r);
	r.suite = owner->name();
	r.details["started_at"] = started_at;
	r.duration_ns =
		std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
	st.clock.mark("cases");
	if (st.klog)
		note_kernel_alarms(r, st.klog->new_alarms());
	return r;
}

// "[3/36] C (movable-foll-pin-longterm): PASS"
void print_progress(size_t i, size_t n, const planned_case &c, const case_record &r)
{
	std::cout << "[" << i + 1 << "/" << n << "] " << c.id << (c.id == c.name ? "" : " (" + c.name + ")") << ": "
		  << upper_name(r.outcome) << (r.reason.empty() ? "" : " - " + r.reason) << std::endl;
}

// A suite's after_last_case() as soon as its last case is done: what it
// holds for its cases (the pin suite's placement pressure: hundreds of MiB
// that fill ZONE_MOVABLE) must not be there for the next suite's cases.
void after_suites_last_case(const std::vector<plan_entry> &plan, size_t i, json &doc)
{
	if (i + 1 == plan.size() || plan[i + 1].owner != plan[i].owner)
		plan[i].owner->after_last_case(doc);
}

void finish_doc(json &doc, const std::vector<std::unique_ptr<suite>> &suites, const run_summary &summary)
{
	for (const auto &s : suites)
		s->finish(doc);
	doc["vmstat_after"] = vmstat_pins();
	doc["finished_at"] = now_iso8601();
	doc["complete"] = true;
	doc["summary"] = summary_json(summary);
	doc["verdict"] = name(summary.overall);
}

// What a run's cases go through besides their suite: the SKIPs of the
// preflight, fault injection, and where each record goes as it ends.
struct case_context {
	const std::map<const suite *, std::optional<std::string>> &cannot_run;
	const fault_plan &fault;
	const run_options &opt;
	results_keeper &results;
	ktap_stream *ktap;	// --format ktap, else null
};


// A case's record: run (or its SKIP), or an error without running when an
// earlier case of its suite left a process stuck in the kernel.
case_record record_of(const plan_entry &e, const case_context &run, run_state &st, json &doc)
{
	if (const auto w = st.wedged.find(e.owner); w != st.wedged.end()) {
		case_record r = e.owner->not_run(e.c, verdict::error, w->second);
		r.suite = e.owner->name();
		return r;
	}
	case_record r = run_one(e, run.cannot_run.at(e.owner), run.fault, run.opt, st, doc);
	apply_known_bugs(r, running_kernel_version(), run.opt.strict);
	note_earlier_kernel_bug(r, st.first_bug);
	if (!st.first_bug && r.details.contains("kernel_alarms"))
		st.first_bug = earlier_bug{r.id, r.details["kernel_alarms"][0].get<std::string>()};
	if (const auto why = wedges_its_suite(r))
		st.wedged[e.owner] = *why;
	return r;
}

// Each case in plan order; its record kept in results.json and streamed
// as KTAP as soon as it ends.
void run_cases(const std::vector<plan_entry> &plan, const case_context &run, step_clock &clock, json &doc)
{
	if (run.ktap)
		run.ktap->header(doc);
	// From here on: what boot and module loading logged is no case's.
	run_state st{.clock = clock};
	try {
		st.klog.emplace();
	} catch (const std::system_error &e) {
		doc["kernel_log_per_case"] = {{"checked", false}, {"why", e.what()}};
	}
	for (size_t i = 0; i < plan.size(); i++) {
		const auto &c = plan[i].c;
		if (c.id == run.fault.panic_at)
			panic_now(c.id);
		const case_record r = record_of(plan[i], run, st, doc);
		print_progress(i, plan.size(), c, r);
		doc["cases"].push_back(to_json(r));
		clock.mark("judging, the kernel log, known bugs");
		// Written as each case ends: a guest that dies keeps what finished.
		run.results.keep(doc, "case " + c.id + " (" + std::to_string(i + 1) + "/" +
					      std::to_string(plan.size()) + "): its record");
		clock.mark("results.json after each case");
		if (run.ktap)
			run.ktap->records(doc, i);
		after_suites_last_case(plan, i, doc);
		clock.mark("KTAP, a suite's end");
	}
}

// The table and the summary line; 1 when results were not all written.
int print_end(const json &doc, const run_summary &summary, const results_keeper &results, size_t planned)
{
	std::cout << '\n' << format_table_for_stdout(doc["cases"]);
	std::cout << "summary: " << summary_text(summary) << " -> " << doc["verdict"].get<std::string>() << '\n';
	if (!results.all_written()) {
		std::cout << "results: NOT all written to " << results.file().string() << " (errors above): "
			  << results.written() << " of " << planned << " case(s) kept" << std::endl;
		return 1;
	}
	return exit_code(summary);
}

} // namespace

int run_matrix(const run_options &opt)
{
	const bool ktap_format = streams_ktap(opt.format);
	auto suites = make_suites(suites_for(opt));
	const auto plan = select_plan(suites, opt.cases);
	const auto fault = parse_fault(opt.fault);
	if (opt.case_timeout_s <= 0)
		throw usage_error("--case-timeout must be a positive number of seconds");
	if (!opt.out.empty()) {
		require_writable_dir(opt.out, "--out");
		fs::create_directories(opt.out);
	}
	step_clock clock;
	const auto kernel = read_kernel_info();
	json doc = run_doc(plan, kernel);
	// --no-module loads nothing, even where a --module was left in a script.
	module_loader loader(opt.module, !opt.pins.without_module());
	doc["module_loaded_by_run"] = loader.loaded();
	doc["module_loaded_from"] = loader.loaded() ? json(loader.loaded_from()) : json(nullptr);
	for (const auto &k : kernel_knobs)
		if (!(fault.*(k.at)).empty() && !fs::exists(k.param))
			throw unmet_need("--fault " + opt.fault + " needs pinmatrix.ko loaded with its parameter " +
					 k.param + " (give --module)");
	const auto cannot_run = preflight_suites(suites, plan, doc);

	// --format ktap: stdout is the KTAP document alone from here on.
	std::optional<ktap_console> ktap;
	if (ktap_format)
		ktap.emplace(ktap_plan{false, {suite_sizes(plan)}});
	std::cout << "pinmatrix: " << plan.size() << " cases on " << kernel.release << " (" << kernel.cmdline << ")\n";
	results_keeper results(opt.out.empty() ? fs::path() : opt.out / "results.json");
	// Written before the first case: a run that dies in it shows it started.
	results.keep(doc, "at the start of the run");
	clock.mark("the start: module, preflight");
	run_cases(plan, {cannot_run, fault, opt, results, ktap ? &ktap->stream() : nullptr}, clock, doc);
	const run_summary summary = summarize_json(doc["cases"]);
	finish_doc(doc, suites, summary);
	if (ktap)
		ktap->stream().end(doc);
	clock.mark("the end: the suites' finish");
	// Up to here: the last results.json and the reports are not in it.
	doc["time_ms"] = step_times_json(clock.steps());
	results.keep(doc, "the end of the run");
	if (!results.file().empty() && results.all_written() && !opt.results_only) {
		try {
			write_reports(opt.out, doc);
		} catch (const std::exception &e) {
			results.failed();
			std::cerr << "pinmatrix: ERROR: reports not written: " << e.what() << std::endl;
		}
	}
	return print_end(doc, summary, results, plan.size());
}

} // namespace pinmatrix
