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

#include <nlohmann/json.hpp>

#include "kernel_info.hpp"
#include "pin_case.hpp"
#include "pin_module.hpp"
#include "placement.hpp"
#include "results.hpp"
#include "sys_error.hpp"
#include "unique_fd.hpp"
#include "verbs.hpp"

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

// What a child sends its parent: {"observation": ...} | {"skip": why} | {"error": why}.
json run_child(const case_def &c, const run_options &opt, bool hang)
{
	while (hang)
		pause();
	try {
		auto module = pin_module::open();
		auto dev = verbs_device::open(opt.device);
		return {{"observation",
			 to_json(run_pin_case(c, module, dev, opt.find_budget_mib << 20))}};
	} catch (const unmet_need &e) {
		return {{"skip", e.what()}};
	} catch (const std::exception &e) {
		return {{"error", e.what()}};
	}
}

case_result run_in_child(const case_def &c, const run_options &opt, bool hang)
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
		std::string msg = run_child(c, opt, hang).dump();
		size_t off = 0;
		while (off < msg.size()) {
			ssize_t n = write(wr.get(), msg.data() + off, msg.size() - off);
			if (n <= 0)
				_exit(3);
			off += size_t(n);
		}
		_exit(0);
	}
	wr.reset();

	const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opt.case_timeout_s);
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
		return not_run(c, verdict::error,
			       "case did not finish within " + std::to_string(opt.case_timeout_s) +
				       " s (a registration that never returns?); killed");
	if (WIFSIGNALED(status))
		return not_run(c, verdict::error,
			       std::string("case process killed by signal ") + strsignal(WTERMSIG(status)));
	json j;
	try {
		j = json::parse(msg);
	} catch (const json::exception &) {
		return not_run(c, verdict::error,
			       "case process exited " + std::to_string(WEXITSTATUS(status)) +
				       " without a result");
	}
	if (j.contains("skip"))
		return not_run(c, verdict::skip, j["skip"]);
	if (j.contains("error"))
		return not_run(c, verdict::error, j["error"]);
	return judge(c, observation_from_json(j.at("observation")));
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
	const std::string known = select_cases({id}).at(0).id;
	(kind == "panic-at" ? f.panic_at : f.hang_at) = known;
	return f;
}

int run_matrix(const run_options &opt)
{
	const auto plan = select_cases(opt.cases);
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
	for (const auto &c : plan)
		doc["plan"].push_back(c.id);
	const auto memlock = read_memlock_info();
	doc["memlock"] = {{"limit_bytes", memlock.limit_bytes ? json(*memlock.limit_bytes) : json("unlimited")},
			  {"cap_ipc_lock", memlock.cap_ipc_lock}};
	doc["vmstat_before"] = vmstat_pins();

	// Preflight, LTP style: an unmet need turns every case into a SKIP.
	std::string cannot_run;
	std::optional<module_loader> loader;
	try {
		loader.emplace(opt.module);
		auto module = pin_module::open();
		auto info = module.info();
		doc["module"] = {{"abi_version", info.abi_version},
				 {"migratetype_method", mt_method_name(info.mt_method)},
				 {"max_pinned_pages", info.max_pinned_pages},
				 {"loaded_by_run", loader->loaded()}};
		auto dev = verbs_device::open(opt.device);
		doc["rdma_device"] = dev.name();
	} catch (const unmet_need &e) {
		cannot_run = e.what();
	}

	std::cout << "pinmatrix: " << plan.size() << " cases on " << kernel.release << " ("
		  << kernel.cmdline << ")\n";
	std::vector<case_result> results;
	std::optional<pin_module> module;
	if (cannot_run.empty())
		module.emplace(pin_module::open());
	placement_pressure pressure;
	std::optional<placement> pressed;
	const fs::path results_file = opt.out.empty() ? fs::path() : opt.out / "results.json";
	for (size_t i = 0; i < plan.size(); i++) {
		const auto &c = plan[i];
		if (c.id == fault.panic_at)
			panic_now(c.id);
		// Fill memory once per placement (not once per case) so that each
		// case's fresh allocation lands where it should.
		if (module && pressed != c.where) {
			const auto p0 = std::chrono::steady_clock::now();
			pressure = {};
			pressure = press_towards(*module, c.where, opt.find_budget_mib << 20);
			pressed = c.where;
			doc["placement_pressure"][std::string(name(c.where))] = {
				{"bytes", pressure.bytes},
				{"reached", pressure.reached},
				{"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - p0).count()}};
		}
		const auto t0 = std::chrono::steady_clock::now();
		case_result r = cannot_run.empty() ? run_in_child(c, opt, c.id == fault.hang_at)
						   : not_run(c, verdict::skip, cannot_run);
		r.duration_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
					std::chrono::steady_clock::now() - t0)
					.count();
		std::string v = name(r.outcome);
		for (auto &ch : v)
			ch = char(toupper(ch));
		std::cout << "[" << i + 1 << "/" << plan.size() << "] " << c.id
			  << (c.id == c.name ? "" : " (" + c.name + ")") << ": " << v << (r.reason.empty() ? "" : " - " + r.reason) << std::endl;
		results.push_back(r);
		doc["cases"].push_back(to_json(r));
		// Written as each case ends: a guest that dies keeps what finished.
		if (!results_file.empty())
			write_json_atomically(results_file, doc);
	}

	const auto summary = summarize(results);
	doc["vmstat_after"] = vmstat_pins();
	doc["finished_at"] = now_iso8601();
	doc["complete"] = true;
	doc["summary"] = {{"pass", summary.pass}, {"fail", summary.fail},
			  {"skip", summary.skip}, {"error", summary.error}};
	doc["verdict"] = name(summary.overall);
	if (!results_file.empty())
		write_json_atomically(results_file, doc);

	std::cout << '\n' << format_table(doc["cases"]);
	std::cout << "summary: pass " << summary.pass << ", fail " << summary.fail << ", skip "
		  << summary.skip << ", error " << summary.error << " -> " << doc["verdict"].get<std::string>()
		  << '\n';
	return exit_code(summary);
}

} // namespace pinmatrix
