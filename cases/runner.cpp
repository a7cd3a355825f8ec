// SPDX-License-Identifier: GPL-2.0
#include "runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "kernel_info.hpp"
#include "pin_module.hpp"
#include "placement.hpp"
#include "plan.hpp"
#include "reports.hpp"
#include "results.hpp"
#include "suite.hpp"
#include "sys_error.hpp"
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

// Loads pinmatrix.ko when /dev/pinmatrix is absent; unloads it when done.
class module_loader {
public:
	explicit module_loader(const std::optional<fs::path> &ko)
	{
		if (!ko || fs::exists(default_device_path))
			return;
		unique_fd fd(::open(ko->c_str(), O_RDONLY | O_CLOEXEC));
		if (!fd)
			throw last_sys_error("open " + ko->string());
		if (syscall(SYS_finit_module, fd.get(), "", 0) && errno != EEXIST)
			throw last_sys_error("finit_module " + ko->string());
		loaded_ = true;
		// devtmpfs creates the node asynchronously after misc_register().
		for (int i = 0; i < 100 && !fs::exists(default_device_path); i++)
			usleep(10'000);
	}
	module_loader(const module_loader &) = delete;
	module_loader &operator=(const module_loader &) = delete;
	~module_loader()
	{
		if (loaded_)
			syscall(SYS_delete_module, "pinmatrix", O_NONBLOCK);
	}
	bool loaded() const { return loaded_; }

private:
	bool loaded_ = false;
};

// Runs one case in a child process, bounded by the case timeout. The child
// sends {"observation"|"skip"|"error"} on a pipe; its exit releases any pin
// it still held.
json run_in_child(suite &s, const planned_case &c, int timeout_s, bool hang)
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
		while (hang)
			pause();
		json msg;
		try {
			msg = s.run_in_child(c);
		} catch (const unmet_need &e) {
			msg = {{"skip", e.what()}};
		} catch (const std::exception &e) {
			msg = {{"error", e.what()}};
		}
		const std::string text = msg.dump();
		size_t off = 0;
		while (off < text.size()) {
			ssize_t n = write(wr.get(), text.data() + off, text.size() - off);
			if (n <= 0)
				_exit(3);
			off += size_t(n);
		}
		_exit(0);
	}
	wr.reset();

	const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
	std::string msg;
	bool timed_out = false;
	for (;;) {
		auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
			deadline - std::chrono::steady_clock::now());
		if (left.count() <= 0) {
			timed_out = true;
			break;
		}
		pollfd p{rd.get(), POLLIN, 0};
		int n = poll(&p, 1, int(std::min<int64_t>(left.count(), 1000)));
		if (n < 0 && errno != EINTR)
			throw last_sys_error("poll");
		if (n <= 0)
			continue;
		char buf[65536];
		ssize_t got = read(rd.get(), buf, sizeof(buf));
		if (got <= 0)
			break;
		msg.append(buf, size_t(got));
	}
	if (timed_out)
		kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;

	if (timed_out)
		return s.not_run(c, verdict::error,
				 "case did not finish within " + std::to_string(timeout_s) +
					 " s (a registration that never returns?); killed");
	if (WIFSIGNALED(status))
		return s.not_run(c, verdict::error,
				 std::string("case process killed by signal ") +
					 strsignal(WTERMSIG(status)));
	json j;
	try {
		j = json::parse(msg);
	} catch (const json::exception &) {
		return s.not_run(c, verdict::error,
				 "case process exited " + std::to_string(WEXITSTATUS(status)) +
					 " without a result");
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

json vmstat_pins()
{
	auto v = read_vmstat();
	return {{"nr_foll_pin_acquired", v["nr_foll_pin_acquired"]},
		{"nr_foll_pin_released", v["nr_foll_pin_released"]}};
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
	if (kind != "panic-at" && kind != "hang-at")
		throw usage_error("--fault '" + spec + "': expected panic-at=CASE or hang-at=CASE");
	auto entry = select_plan(make_suites({}), {id});
	if (entry.size() != 1)
		throw usage_error("--fault '" + spec + "': name one case");
	(kind == "panic-at" ? f.panic_at : f.hang_at) = entry[0].c.id;
	return f;
}

int run_matrix(const run_options &opt)
{
	suite_options so{opt.device, opt.find_budget_mib, restricted_placement(opt.placement)};
	so.first_pin_source = opt.first_pin;
	so.second_pin = opt.second_pin;
	check(plan_options{opt.first_pin, opt.second_pin});
	// "auto" on a boot with neither: plan A-C on ZONE_MOVABLE, they SKIP.
	if (opt.placement == "auto" && so.restricted == placement::ordinary) {
		so.restricted = placement::movable;
		so.restricted_present = false;
	}
	auto suites = make_suites(so);
	const auto plan = select_plan(suites, opt.cases);
	const auto fault = parse_fault(opt.fault);
	if (opt.case_timeout_s <= 0)
		throw usage_error("--case-timeout must be a positive number of seconds");
	if (!opt.out.empty())
		fs::create_directories(opt.out);

	const auto kernel = read_kernel_info();
	json doc = {{"schema", results_schema},
		    {"tool", {{"name", "pinmatrix"}, {"version", PINMATRIX_VERSION}}},
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

	// Preflight, LTP style: an unmet need turns a suite's cases into SKIPs.
	module_loader loader(opt.module);
	doc["module_loaded_by_run"] = loader.loaded();
	std::map<const suite *, std::optional<std::string>> cannot_run;
	for (const auto &s : suites)
		if (std::any_of(plan.begin(), plan.end(), [&](const plan_entry &e) { return e.owner == s.get(); }))
			cannot_run[s.get()] = s->preflight(doc);

	std::cout << "pinmatrix: " << plan.size() << " cases on " << kernel.release << " ("
		  << kernel.cmdline << ")\n";
	run_summary summary;
	const fs::path results_file = opt.out.empty() ? fs::path() : opt.out / "results.json";
	for (size_t i = 0; i < plan.size(); i++) {
		auto &[owner, c] = plan[i];
		if (c.id == fault.panic_at)
			panic_now(c.id);
		const auto &why_not = cannot_run[owner];
		if (!why_not)
			owner->before_case(c, doc);
		const auto t0 = std::chrono::steady_clock::now();
		json r = why_not ? owner->not_run(c, verdict::skip, *why_not)
				 : run_in_child(*owner, c, opt.case_timeout_s, c.id == fault.hang_at);
		r["suite"] = owner->name();
		r["duration_ns"] = std::chrono::duration_cast<std::chrono::nanoseconds>(
					   std::chrono::steady_clock::now() - t0)
					   .count();
		std::string v = r.value("verdict", "error");
		for (auto &ch : v)
			ch = char(toupper(ch));
		const std::string reason = r.value("reason", "");
		std::cout << "[" << i + 1 << "/" << plan.size() << "] " << c.id
			  << (c.id == c.name ? "" : " (" + c.name + ")") << ": " << v
			  << (reason.empty() ? "" : " - " + reason) << std::endl;
		doc["cases"].push_back(r);
		// Written as each case ends: a guest that dies keeps what finished.
		if (!results_file.empty())
			write_json_atomically(results_file, doc);
	}
	for (const auto &s : suites)
		s->finish(doc);

	summary = summarize_json(doc["cases"]);
	doc["vmstat_after"] = vmstat_pins();
	doc["finished_at"] = now_iso8601();
	doc["complete"] = true;
	doc["summary"] = {{"pass", summary.pass}, {"fail", summary.fail},
			  {"skip", summary.skip}, {"error", summary.error}};
	doc["verdict"] = name(summary.overall);
	if (!results_file.empty()) {
		write_json_atomically(results_file, doc);
		write_reports(opt.out, doc);
	}

	std::cout << '\n' << format_table(doc["cases"]);
	std::cout << "summary: pass " << summary.pass << ", fail " << summary.fail << ", skip "
		  << summary.skip << ", error " << summary.error << " -> " << doc["verdict"].get<std::string>()
		  << '\n';
	return exit_code(summary);
}

} // namespace pinmatrix
