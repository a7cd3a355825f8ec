// SPDX-License-Identifier: GPL-2.0
#include "bisect.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>

#include "clock.hpp"
#include "atomic_file.hpp"
#include "boot.hpp"
#include "build_tools.hpp"
#include "data_dir.hpp"
#include "kernels.hpp"
#include "launcher.hpp"
#include "report_input.hpp"
#include "sys_error.hpp"
#include "text.hpp"
#include "unique_fd.hpp"
#include "user_input.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// git -C TREE ARGS...: its exit status and stdout (stderr passes through).
std::pair<int, std::string> git(const fs::path &tree, std::vector<std::string> args)
{
	args.insert(args.begin(), {"git", "-C", tree.string()});
	return run_capture(args);
}

// What git answers, or usage_error(what) when it fails.
std::string git_answer(const fs::path &tree, const std::vector<std::string> &args, const std::string &what)
{
	auto [rc, out] = git(tree, args);
	if (rc)
		throw usage_error(what);
	return out;
}

// Paths absolute (git bisect run runs each step in the tree), defaults set.
bisect_options completed(bisect_options opt)
{
	for (fs::path *p : {&opt.tree, &opt.out, &opt.cache})
		*p = fs::absolute(*p);
	opt.build = opt.build.empty() ? opt.out / "build" : fs::absolute(opt.build);
	if (opt.fragments.empty())
		opt.fragments.push_back(data_dir() / "vm/kconfig/pinmatrix.config");
	for (auto &f : opt.fragments)
		f = fs::absolute(f);
	return opt;
}

void check_tree(const bisect_options &opt)
{
	const std::string t = "--tree " + opt.tree.string();
	if (!fs::is_directory(opt.tree))
		throw usage_error(t + ": not a directory");
	const auto top = git_answer(opt.tree, {"rev-parse", "--show-toplevel"}, t + ": not a git work tree");
	if (fs::weakly_canonical(top) != fs::weakly_canonical(opt.tree))
		throw usage_error(t + ": not the top of its git work tree (" + top + ")");
	if (!fs::is_regular_file(opt.tree / "Makefile") ||
	    !fs::is_regular_file(opt.tree / "scripts/kconfig/merge_config.sh"))
		throw usage_error(t + ": not a kernel source tree (no Makefile or scripts/kconfig/merge_config.sh)");
	if (!git_answer(opt.tree, {"status", "--porcelain", "--untracked-files=no"}, t + ": git status failed").empty())
		throw usage_error(t + " has uncommitted changes: git bisect would check out over them "
				      "(commit or stash them first)");
	const fs::path started = git_answer(opt.tree, {"rev-parse", "--git-path", "BISECT_START"}, t);
	if (fs::exists(started.is_absolute() ? started : opt.tree / started))
		throw usage_error(t + ": a bisect is already in progress there (git bisect reset ends it)");
}

std::string commit_of(const bisect_options &opt, const std::string &rev, const char *flag)
{
	if (rev.empty() || rev.front() == '-')
		throw usage_error(std::string(flag) + " '" + rev + "': not a revision");
	return git_answer(opt.tree, {"rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}"},
			  std::string(flag) + " " + rev + ": not a commit of " + opt.tree.string());
}

void check_bisect_options(const bisect_options &opt)
{
	check_tree(opt);
	const auto good = commit_of(opt, opt.good, "--good"), bad = commit_of(opt, opt.bad, "--bad");
	if (good == bad)
		throw usage_error("--good and --bad are the same commit");
	if (git(opt.tree, {"merge-base", "--is-ancestor", good, bad}).first)
		throw usage_error("--good " + opt.good + " is not an ancestor of --bad " + opt.bad);
	if (opt.cases.empty())
		throw usage_error("--cases: name the cases that show the regression");
	find_boot_placement(opt.boot);
	for (const auto &f : opt.fragments)
		require_kconfig_fragment(f, "--fragment");
	require_writable_dir(opt.out, "--out");
	require_writable_dir(opt.build, "--build");
	require_writable_dir(opt.cache, "--cache");
	for (const auto &[p, flag] : {std::pair{opt.out, "--out"}, std::pair{opt.build, "--build"}})
		if (is_within(p, opt.tree))
			throw usage_error(std::string(flag) + " " + p.string() +
					  " is inside --tree: git bisect checks out there");
	// Each step builds your tree (vm/bisect-build.sh): a missing tool would
	// skip every commit.
	require_build_tools({.source_package = false, .patches = false, .fragments = opt.fragments});
}

// pinmatrix bisect-step and its options, as git bisect run calls it.
std::vector<std::string> step_argv(const bisect_options &opt)
{
	std::string cases;
	for (const auto &c : opt.cases)
		cases += (cases.empty() ? "" : ",") + c;
	std::vector<std::string> argv = {fs::read_symlink("/proc/self/exe").string(),
					 "bisect-step",
					 "--tree", opt.tree.string(),
					 "--good", opt.good,
					 "--bad", opt.bad,
					 "--out", opt.out.string(),
					 "--cases", cases,
					 "--boot", opt.boot,
					 "--build", opt.build.string(),
					 "--cache", opt.cache.string(),
					 "--case-timeout", std::to_string(opt.case_timeout_s),
					 "--timeout", std::to_string(opt.timeout_s),
					 "--cpus", std::to_string(opt.cpus)};
	for (const auto &f : opt.fragments)
		argv.insert(argv.end(), {"--fragment", f.string()});
	return argv;
}

// Runs argv with its stdout and stderr shown here and kept in LOG; returns
// its exit status and what it printed.
std::pair<int, std::string> run_shown_and_kept(const std::vector<std::string> &argv, const fs::path &log)
{
	unique_fd kept(open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
	if (!kept)
		throw last_sys_error("open " + log.string());
	return run_capture(argv, {true, &std::cout, kept.get()});
}

// git bisect start BAD GOOD, and git bisect reset however the run ends:
// the user's tree goes back to the commit it had.
class bisect_session {
public:
	bisect_session(const fs::path &tree, const std::string &good, const std::string &bad) : tree_(tree)
	{
		if (git(tree_, {"bisect", "start", bad, good}).first)
			throw std::runtime_error("git bisect start failed in " + tree_.string());
	}
	bisect_session(const bisect_session &) = delete;
	bisect_session &operator=(const bisect_session &) = delete;
	~bisect_session() { git(tree_, {"bisect", "reset"}); }

private:
	fs::path tree_;
};

std::vector<json> read_steps(const fs::path &file)
{
	std::vector<json> steps;
	std::ifstream in(file);
	for (std::string line; std::getline(in, line);)
		if (auto j = json::parse(line, nullptr, false); j.is_object())
			steps.push_back(std::move(j));
	return steps;
}

std::string steps_text(const std::vector<json> &steps)
{
	std::string out;
	for (const auto &s : steps) {
		char times[64];
		std::snprintf(times, sizeof(times), "build %5.0f s, run %4.0f s", s.value("build_s", 0.0),
			      s.value("run_s", 0.0));
		out += "  " + s.value("commit", std::string()).substr(0, 12) + "  " +
		       report::pad_to_width(s.value("verdict", ""), 5) + "  " + times + "  " +
		       report::one_line(s.value("subject", "")) + "\n      " + report::one_line(s.value("why", "")) +
		       "\n";
	}
	return out;
}

void write_bisect_reports(const bisect_options &opt, const std::vector<json> &steps,
			  const std::optional<std::pair<std::string, std::string>> &first_bad, const std::string &result)
{
	json doc = {{"schema", "pinmatrix-bisect/1"},
		    {"tree", opt.tree.string()},
		    {"good", opt.good},
		    {"bad", opt.bad},
		    {"cases", opt.cases},
		    {"boot", opt.boot},
		    {"steps", steps},
		    {"first_bad", first_bad ? json{{"commit", first_bad->first}, {"subject", first_bad->second}}
					    : json(nullptr)},
		    {"result", result}};
	write_file_atomically(opt.out / "bisect.json", doc.dump(2) + "\n");
	write_file_atomically(opt.out / "bisect.log", "pinmatrix bisect of " + report::one_line(opt.tree.string()) +
							      ", good " + report::one_line(opt.good) + ", bad " +
							      report::one_line(opt.bad) + "\n" + steps_text(steps) +
							      result + "\n");
}

void append_step(const fs::path &out, const json &step)
{
	const fs::path file = out / "steps.jsonl";
	unique_fd fd(open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644));
	const std::string line = step.dump() + "\n";
	if (!fd || write(fd.get(), line.data(), line.size()) != ssize_t(line.size()))
		throw last_sys_error("append to " + file.string());
}

// The step's build: vm/bisect-build.sh into opt.build; false when it failed.
bool build_step(const bisect_options &opt, const fs::path &step_dir)
{
	std::vector<std::string> argv = {(data_dir() / "vm/bisect-build.sh").string(), opt.tree.string(),
					 opt.build.string(), (step_dir / "build.log").string()};
	for (const auto &f : opt.fragments)
		argv.push_back(f.string());
	return run_capture(argv).first == 0;
}

// The step's guest: its results.json, or why there is none.
judged_step run_step_guest(const bisect_options &opt, const fs::path &step_dir)
{
	vm_options vm;
	vm.kernel = "tree:" + opt.build.string();
	vm.boot = opt.boot;
	vm.guest.cases = opt.cases;
	vm.out = step_dir / "run";
	vm.guest.cache = opt.cache;
	vm.guest.case_timeout_s = opt.case_timeout_s;
	vm.guest.timeout_s = opt.timeout_s;
	vm.guest.cpus = opt.cpus;
	try {
		run_vm(vm);
		return judge_step(report::load_results(vm.out).doc);
	} catch (const std::exception &e) {
		return {step_verdict::skip, std::string("the guest could not run: ") + e.what()};
	}
}

constexpr int git_bisect_code(step_verdict v)
{
	return v == step_verdict::good ? 0 : v == step_verdict::bad ? 1 : 125;
}

} // namespace

const char *name(step_verdict v)
{
	return v == step_verdict::good ? "good" : v == step_verdict::bad ? "bad" : "skip";
}

judged_step judge_step(const json &results)
{
	std::string failed, errored, passed, skipped;
	auto add = [](std::string &to, const json &c) {
		if (to.empty())
			to = c.value("id", "?") + (c.value("reason", "").empty() ? "" : ": " + c.value("reason", ""));
	};
	for (const auto &c : results.value("cases", json::array())) {
		const std::string v = c.value("verdict", "");
		add(v == "fail" || v == "xfail" ? failed : v == "error" ? errored : v == "skip" ? skipped : passed, c);
	}
	if (!failed.empty())
		return {step_verdict::bad, "failed: " + report::one_line(failed)};
	if (!errored.empty())
		return {step_verdict::skip, "ended in error (no verdict): " + report::one_line(errored)};
	if (!passed.empty())
		return {step_verdict::good, "passed: " + report::one_line(passed)};
	return {step_verdict::skip, skipped.empty() ? "no case ran" : "skipped: " + report::one_line(skipped)};
}

int run_bisect_step(const bisect_options &given)
{
	const bisect_options opt = completed(given);
	const auto head = git_answer(opt.tree, {"log", "-1", "--format=%H %s"}, "git log failed in " + opt.tree.string());
	const std::string commit = head.substr(0, head.find(' '));
	const fs::path step_dir = opt.out / "steps" / commit.substr(0, 12);
	fs::remove_all(step_dir);
	fs::create_directories(step_dir);
	json step = {{"commit", commit}, {"subject", head.substr(std::min(head.size(), commit.size() + 1))}};
	const auto t0 = std::chrono::steady_clock::now();
	const bool built = build_step(opt, step_dir);
	step["build_s"] = seconds_since(t0);
	const auto t1 = std::chrono::steady_clock::now();
	const judged_step j = built ? run_step_guest(opt, step_dir)
				    : judged_step{step_verdict::skip, "the build failed (steps/" +
									      commit.substr(0, 12) + "/build.log)"};
	step["run_s"] = built ? seconds_since(t1) : 0.0;
	step["verdict"] = name(j.verdict);
	step["why"] = j.why;
	append_step(opt.out, step);
	std::cout << "pinmatrix bisect: " << commit.substr(0, 12) << " is " << name(j.verdict) << ": " << j.why
		  << std::endl;
	return git_bisect_code(j.verdict);
}

int run_bisect(const bisect_options &given)
{
	const bisect_options opt = completed(given);
	check_bisect_options(opt);
	fs::create_directories(opt.out);
	fs::remove(opt.out / "steps.jsonl");
	std::pair<int, std::string> run;
	std::string git_log;
	{
		bisect_session session(opt.tree, opt.good, opt.bad);
		std::vector<std::string> argv = {"git", "-C", opt.tree.string(), "bisect", "run"};
		for (auto &a : step_argv(opt))
			argv.push_back(std::move(a));
		run = run_shown_and_kept(argv, opt.out / "git-bisect-run.log");
		git_log = git(opt.tree, {"bisect", "log"}).second;
	}
	write_file_atomically(opt.out / "git-bisect.log", git_log + "\n");
	std::smatch m;
	std::optional<std::pair<std::string, std::string>> first_bad;
	// git's own log, not the run's output (which holds the guests' consoles).
	if (std::regex_search(git_log, m, std::regex("(^|\n)# first bad commit: \\[([0-9a-f]{40})\\]")))
		first_bad = std::pair{m[2].str(), git(opt.tree, {"log", "-1", "--format=%s", m[2].str()}).second};
	const std::string result =
		first_bad ? "first bad commit: " + first_bad->first + " " + report::one_line(first_bad->second)
			  : "no first bad commit: git bisect run ended with exit " + std::to_string(run.first) +
				    " (git-bisect-run.log says why; skipped steps leave several candidates)";
	const auto steps = read_steps(opt.out / "steps.jsonl");
	write_bisect_reports(opt, steps, first_bad, result);
	std::cout << "\npinmatrix bisect: " << steps.size() << " step(s):\n"
		  << steps_text(steps) << "pinmatrix bisect: " << result << "\n(" << (opt.out / "bisect.log").string()
		  << ", bisect.json, git-bisect.log)\n";
	return first_bad ? 0 : 1;
}

} // namespace pinmatrix
