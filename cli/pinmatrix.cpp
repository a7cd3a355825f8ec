// SPDX-License-Identifier: GPL-2.0
// pinmatrix: the pin causal matrix, on this machine or in a QEMU guest.
//
// Exit codes: 0 every case passed or skipped (and at least one passed),
// 1 a case failed or ended in error, 2 bad usage or setup, 4 all skipped;
// gate: 0 no regression against its baseline, 1 a regression (reports/gate.hpp).

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <iostream>
#include <memory>
#include <regex>

#include <CLI/CLI.hpp>

#include "pin/plan.hpp"
#include "rules.hpp"
#include "runner.hpp"
#include "suite.hpp"
#include "sys_error.hpp"
#include "text.hpp"
#include "explain.hpp"
#include "kernels.hpp"
#include "accel.hpp"
#include "bisect.hpp"
#include "build_info.hpp"
#include "data_dir.hpp"
#include "gate.hpp"
#include "ktap.hpp"
#include "launcher.hpp"
#include "reports.hpp"
#include "mutants_report.hpp"
#include "promises_report.hpp"
#include "terminal_table.hpp"
#include "fleet.hpp"
#include "kcidb.hpp"
#include "manpage.hpp"
#include "user_input.hpp"

using namespace pinmatrix;

namespace {

constexpr int exit_usage = 2;
// kselftest's KSFT_SKIP, as a run whose every case skipped (matrix/results.hpp):
// what this machine lacks is not the user's mistake (2 reads as XFAIL there).
constexpr int exit_cannot_run = 4;
constexpr const char *strict_help =
	"Count a failure that a known bug of this kernel predicts (XFAIL, matrix/known_bugs.cpp) as a FAIL, "
	"and a pass where such a bug should have shown (XPASS) too";

// `pinmatrix cases`: each case of the plan (--cases as `run` takes it), in
// plan order, what it checks and what it expects (on --kernel's version,
// else this machine's), as the run's JSON has it.
nlohmann::json plan_json(const suite_options &opt, const std::vector<std::string> &wanted)
{
	const auto all = make_suites(opt);
	nlohmann::json suites = nlohmann::json::array();
	const suite *at = nullptr;
	for (const auto &[owner, c] : select_plan(all, wanted)) {
		if (owner != at)
			suites.push_back({{"name", owner->name()}, {"cases", nlohmann::json::array()}});
		at = owner;
		suites.back()["cases"].push_back({{"id", c.id},
						  {"name", c.name},
						  {"checks", owner->describe(c)},
						  {"expected", owner->not_run(c, verdict::skip, "").expected}});
	}
	return {{"suites", suites}};
}

// The same for people: a case a line, its description wrapped to the
// terminal's width (or default_table_width) under its own column.
void print_cases(const nlohmann::json &plan, size_t width)
{
	constexpr size_t id_column = 42;
	for (const auto &s : plan["suites"]) {
		std::cout << "suite " << s["name"].get<std::string>() << ":\n";
		for (const auto &c : s["cases"]) {
			const std::string id = c["id"], name = c["name"];
			const std::string head = "  " + id + (id == name ? "" : " (" + name + ")");
			// Its own line when it reaches the column, else the first
			// line's indent.
			const std::string text = wrap_words(c["checks"], std::max(width, id_column + 20), id_column, id_column);
			if (head.size() >= id_column)
				std::cout << head << '\n' << text;
			else
				std::cout << head << text.substr(head.size());
		}
	}
}
// A whole number in [LO, HI], or "'abc' is not a whole number", "-3 is out
// of range 1 to 300" (CLI11's own ranges print DBL_MAX's 309 digits), or
// "'010': a leading zero" (CLI11 converts that as octal).
CLI::Validator whole_number(long long lo, long long hi)
{
	return CLI::Validator(
		[lo, hi](std::string &s) -> std::string {
			long long v = 0;
			const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
			if (s.empty() || end != s.data() + s.size() || ec == std::errc::invalid_argument)
				return "'" + s + "' is not a whole number";
			// CLI11 would read 010 as octal 8 after this check read 10.
			if (s.size() > 1 && s[0] == '0')
				return "'" + s + "': a leading zero (numbers are decimal)";
			if (ec == std::errc::result_out_of_range || v < lo || v > hi)
				return s + " is out of range " + std::to_string(lo) + " to " + std::to_string(hi);
			return "";
		},
		"INT in [" + std::to_string(lo) + " - " + std::to_string(hi) + "]");
}

// A path option given as "": refused, never read as the option not given
// (`report DIR --out ""` wrote next to DIR).
const CLI::Validator a_path([](std::string &p) { return p.empty() ? std::string("an empty path") : std::string(); },
			    "PATH");

// A readable regular file: /dev/null or a FIFO is said to be one, not "not found".
const CLI::Validator regular_file(
	[](std::string &p) {
		const auto why = not_a_regular_file(p);
		return why ? p + ": " + *why : std::string();
	},
	"FILE");

// A form of --format: its name, and what stdout holds in it.
struct output_form {
	const char *name;
	const char *holds;
};

// --format, one meaning in every command: the form of what the command
// prints on stdout (the files it writes are the same in every form). A form
// the command does not have is refused as it is parsed, in the one wording
// of format_refusal() (lib/user_input.hpp).
CLI::Option *add_format_option(CLI::App *cmd, std::string &format, const std::vector<output_form> &forms)
{
	std::vector<std::string> names;
	std::string help = "What stdout holds:";
	for (const auto &f : forms) {
		help += std::string(names.empty() ? " " : "; ") + f.name + ": " + f.holds;
		names.emplace_back(f.name);
	}
	return cmd->add_option("--format", format, help + " (files written are the same in every form)")
		->check(CLI::Validator([names](std::string &v) { return format_refusal(v, names); }, join(names, "|")));
}

// --format of run, vm and gate: what a kselftest runner or LAVA reads on
// stdout.
void add_run_format_option(CLI::App *cmd, std::string &format)
{
	add_format_option(cmd, format,
			  {{"text", "people's lines and the table"},
			   {"ktap", "KTAP version 1 as cases end, one subtest per suite (per kernel and boot with "
				    "--matrix); people's lines go to stderr"}})
		->capture_default_str();
}

const CLI::Validator patch_file(
	[](std::string &p) {
		try {
			require_patch(p, "patch");
		} catch (const usage_error &e) {
			return std::string(e.what());
		}
		return std::string();
	},
	"PATCH");

// --first-pin, --no-module and --second-pin, as every command that plans
// pin cases names them (lib/first_pin.hpp pin_sources). --no-module is the
// stock kernel's source; --first-pin does not take its name.
CLI::Option *add_pin_options(CLI::App *cmd, pin_sources &pins, bool for_guest = false)
{
	const std::string suffix = for_guest ? " (passed to `pinmatrix run` in the guest)" : "";
	auto *first = cmd->add_option("--first-pin", pins.first_pin,
				      "Who takes the first pins: module (its contracts), io_uring (fixed buffers), "
				      "cuda (cuMemHostRegister, cudaHostRegister, cudaHostAlloc), hip (hipHostRegister)" +
					      suffix)
			      ->capture_default_str()
			      ->check(CLI::Validator(
				      [](std::string &s) {
					      return s == pin_sources::stock_source
							     ? std::string("the stock kernel's first pins are --no-module")
							     : std::string();
				      },
				      "SOURCE"));
	auto *no_module = cmd->add_flag_callback(
		"--no-module", [&pins] { pins.first_pin = pin_sources::stock_source; },
		"Load and open no out-of-tree module (a Secure Boot node): first pins from the stock kernel "
		"(vmsplice into a pipe, io_uring), pages read through /proc/self/pagemap" + suffix);
	no_module->excludes(first);
	cmd->add_option("--second-pin", pins.second_pin,
			std::string("The long-term second pin: ibv_reg_mr (an RDMA device), io_uring (no device) or vfio-type1 "
			"(a device bound to vfio-pci; `pinmatrix vm` gives its guest QEMU's edu device") +
				(for_guest ? "; unnamed, io_uring where the guest's kernel has no Soft-RoCE)" : ")") + suffix)
		->capture_default_str()
		->each([&pins](const std::string &) { pins.second_pin_named = true; });
	return no_module;
}

// --cases A,B (repeatable): CLI11 would read "A,,B" as A,B; an empty name
// is refused instead.
std::vector<std::string> case_list(const std::vector<std::string> &given)
{
	std::vector<std::string> out;
	for (const auto &text : given) {
		size_t from = 0;
		for (size_t at = 0; at != std::string::npos; from = at + 1) {
			at = text.find(',', from);
			out.push_back(text.substr(from, at == std::string::npos ? at : at - from));
			if (out.back().empty())
				throw usage_error("--cases '" + text + "': an empty case name (two commas, or one at an end?)");
		}
	}
	return out;
}

// CLI11 says "A subcommand is required" for `pinmatrix --frob` and
// `pinmatrix kernel frob`: the word it could not place, named.
std::optional<std::string> unplaced_word(CLI::App &app)
{
	CLI::App *at = &app;
	std::string path = "pinmatrix";
	while (!at->get_subcommands().empty()) {
		at = at->get_subcommands().front();
		path += " " + at->get_name();
	}
	const auto rest = at->remaining();
	if (rest.empty())
		return std::nullopt;
	if (rest.front().rfind("-", 0) == 0)
		return path + ": unknown option '" + rest.front() + "'";
	const std::string names =
		join(at->get_subcommands({}), ", ", [](const CLI::App *sub) { return sub->get_name(); });
	return path + ": unknown command '" + rest.front() + "'" + (names.empty() ? "" : " (commands: " + names + ")");
}

// One line for bad usage; help and --version as CLI11 prints them.
int parse_error(CLI::App &app, const CLI::ParseError &e)
{
	if (e.get_exit_code() == 0)
		return app.exit(e);
	const bool unplaced = dynamic_cast<const CLI::RequiredError *>(&e) || dynamic_cast<const CLI::ExtrasError *>(&e);
	if (const auto word = unplaced ? unplaced_word(app) : std::nullopt)
		std::cerr << *word << " (see --help)\n";
	else
		std::cerr << "pinmatrix: " << shown_message(e.what()) << " (see --help)\n";
	return 2;
}

// --kernel's help, with the named builds from their table.
std::string kernel_help(const char *first)
{
	std::string h = std::string(first) +
			" | build[:NAME | :FRAGMENT[+FRAGMENT...]] (tinyconfig + fragments in order) | image:DIR"
			" | tree:DIR (your kernel build tree, after make bzImage modules)"
			" | debs:DIR (a kernel's linux-image- and linux-headers- .debs)."
			" Named builds (fragments in vm/kconfig/):";
	for (const auto &b : named_builds()) {
		h += std::string(" build") + (*b.name ? ":" : "") + b.name + " = " + join(b.fragments, " + ") + " (" +
		     b.what + ");";
	}
	h.back() = '.';
	return h + " See docs/kernels.md";
}

// Each command's exit codes: the last lines of its --help, as a shell
// script reads them.
namespace exit_codes {
constexpr const char *listing = "0 listed; 2 bad usage";
constexpr const char *run = "0 every case passed, skipped, or failed as a known bug of the kernel predicts (XFAIL); "
			    "1 a case failed or ended in error (with --strict, an XFAIL or XPASS too); 2 bad usage or "
			    "setup; 4 every case skipped, or this machine cannot run them (with --baseline, as gate's)";
constexpr const char *gate = "0 no regression against the baseline; 1 a regression (a verdict, a kernel bug line "
			     "the baseline did not have; with --latency, a latency); 2 bad usage or setup, or a run "
			     "that ended without results; 4 no case decided anything";
constexpr const char *bisect = "0 the first bad commit was found; 1 it was not; 2 bad usage or setup; 4 this "
			       "machine cannot run the cases";
constexpr const char *kernel_build = "0 the kernel's directory is on stdout; 2 bad usage; 4 it cannot be built or "
				     "fetched here (for a build, a tool it needs missing: each named, with the apt-get "
				     "command that installs them, before anything is written)";
constexpr const char *report = "0 written; 1 with --compare a regression (a verdict; with --latency or "
			       "--bench-threshold also those), with --mutants a mutant not caught or a kernel as it "
			       "was not clean, with --fleet a case that failed or ended in error; 2 bad usage or "
			       "results that cannot be read";
constexpr const char *explain = "0 explained (with -- CMD: CMD's own status, 127 when CMD cannot be run); 2 bad "
				"usage, or a process or range that cannot be read; 4 this machine cannot trace it";
} // namespace exit_codes

CLI::App *with_exit_codes(CLI::App *cmd, const char *codes)
{
	cmd->footer(std::string("Exit codes: ") + codes + ".");
	return cmd;
}

// A subcommand: its options declared on the app, and what it runs once
// they are parsed (its options live in the closure).
struct subcommand {
	CLI::App *app;
	std::function<int()> run;
};

// --kernel of `cases`: an upstream version (6.12.117, or 6.12 for its
// first release).
CLI::Validator upstream_version_text(
	[](std::string &v) {
		return std::regex_match(v, std::regex(R"([0-9]{1,3}\.[0-9]{1,3}(\.[0-9]{1,4})?)"))
			       ? std::string()
			       : "'" + v + "' is not an upstream kernel version (6.12.117, or 6.12)";
	},
	"VERSION");

subcommand add_cases(CLI::App &app)
{
	auto opt = std::make_shared<suite_options>();
	auto format = std::make_shared<std::string>("text");
	auto kernel = std::make_shared<std::string>();
	auto cases = std::make_shared<std::vector<std::string>>();
	auto *cmd = with_exit_codes(app.add_subcommand("cases", "List the plan: every case and its expected outcome"),
				    exit_codes::listing);
	add_pin_options(cmd, opt->pins);
	cmd->add_option("--cases", *cases, "The cases `run --cases` would run, A,B,-C (default: all)");
	add_format_option(cmd, *format,
			  {{"text", "the plan, fitted to the terminal"},
			   {"json", "the plan as data, each case's checks and expected as results.json has them"},
			   {"ktap-plan", "the plan as a run's KTAP announces it: KTAP version 1, 1..SUITES, and a "
					 "'# plan: SUITE N CASE' line a case, its result line to come (no results)"}})
		->capture_default_str();
	cmd->add_option("--kernel", *kernel, "What each case expects on this upstream kernel version, not this "
					     "machine's (the rows that depend on it: backing, pinner)")
		->check(upstream_version_text);
	return {cmd, [opt, format, kernel, cases] {
			check(opt->pins);
			if (!kernel->empty())
				opt->judged_kernel = {false, upstream_version(*kernel, "")};
			const auto plan = plan_json(*opt, case_list(*cases));
			if (*format == "json")
				std::cout << plan.dump(2) << '\n';
			else if (*format == "ktap-plan")
				std::cout << format_ktap_plan(plan, "pinmatrix " + std::string(suite_version()));
			else
				print_cases(plan, terminal_width().value_or(default_table_width));
			return 0;
		}};
}

// `pinmatrix promises`: what the suite promises to check, the cases that
// check each promise and the mutants that prove those cases can fail.
subcommand add_promises(CLI::App &app)
{
	auto filter = std::make_shared<promises_filter>();
	auto format = std::make_shared<std::string>("text");
	auto *cmd = with_exit_codes(
		app.add_subcommand("promises",
				   "Every promise of both contracts, the cases that check it, the mutants that prove them"),
		exit_codes::listing);
	cmd->add_option("--contract", filter->contract, "Only this contract's promises: pin or ualink")
		->check(CLI::IsMember({"pin", "ualink"}));
	cmd->add_flag("--unproved", filter->unproved_only, "Only the promises that no mutant proves");
	add_format_option(cmd, *format,
			  {{"text", "the promise and mutant tables"}, {"json", "the tables and their counts as data"}})
		->capture_default_str();
	return {cmd, [filter, format] {
			if (*format == "json")
				std::cout << promises_json(*filter).dump(2) << '\n';
			else
				std::cout << format_promises_text(*filter, terminal_width().value_or(default_table_width));
			return 0;
		}};
}

// --latency of `report --compare`, `gate` and `run --baseline`.
CLI::Option *add_latency_flag(CLI::App *cmd, bool &latency)
{
	return cmd->add_flag("--latency", latency,
		      "Count a case whose latency moved beyond the spread, slower (every new sample above every "
		      "old one, 3 or more a side), as a regression (without it, latency is informational)");
}

subcommand add_run(CLI::App &app)
{
	auto run = std::make_shared<run_options>();
	auto gate = std::make_shared<gate_options>();
	auto cases = std::make_shared<std::vector<std::string>>();
	auto *cmd = with_exit_codes(app.add_subcommand("run", "Run the matrix here (in a guest, or on a real node)"),
				    exit_codes::run);
	cmd->add_option("--out", run->out, "Directory for results.json")->check(a_path);
	cmd->add_option("--cases", *cases, "Case ids or names, A,B (default: all)");
	cmd->add_option("--device", run->device, "RDMA device (default: the first one)");
	auto *module = cmd->add_option("--module", run->module, "pinmatrix.ko to load when /dev/pinmatrix is absent (without it: `modprobe pinmatrix`, the node's DKMS build)")
			       ->check(regular_file);
	cmd->add_option("--case-timeout", run->case_timeout_s, "Seconds a case may take")
		->check(whole_number(1, INT_MAX));
	cmd->add_option("--find-budget", run->find_budget_mib, "MiB a case may fault in to find a page in its placement")
		->check(whole_number(1, INT_MAX));
	cmd->add_option("--latency-samples", run->latency_samples,
			"Registrations each pin case times: its own, then repeats on fresh pages (outside the verdict)")
		->check(whole_number(1, 100))
		->capture_default_str();
	cmd->add_option("--placement", run->placement,
			"Restricted memory of this boot for cases A-C: auto, movable, cma, ordinary")
		->capture_default_str();
	cmd->add_option("--fault", run->fault,
			"Fault injection: panic-at=CASE | hang-at=CASE | kernel-hang-at=CASE | kernel-hang-in-thread-at=CASE | kernel-spin-at=CASE | "
			"kernel-oops-at=CASE | kernel-leak-pin-at=CASE");
	add_pin_options(cmd, run->pins)->excludes(module);
	add_run_format_option(cmd, run->format);
	cmd->add_flag("--strict", run->strict, strict_help);
	cmd->add_flag("--results-only", run->results_only,
		      "Write results.json to --out and no reports (pinmatrix vm's guest: the host writes them)");
	auto *baseline = cmd->add_option("--baseline", gate->baseline,
					 "The gate on this node: compare with this baseline run (its directory or "
					 "results.json; the kernel before the update) and exit 1 only on a regression")
				->check(a_path);
	add_latency_flag(cmd, gate->compare.latency)->needs(baseline);
	return {cmd, [run, gate, cases, baseline] {
			run->cases = case_list(*cases);
			if (!baseline->count())
				return run_matrix(*run);
			const auto old = read_baseline(*gate, run->out);
			return gated_run([run] { return run_matrix(*run); }, old, run->out, streams_ktap(run->format),
					 gate->compare);
		}};
}

void add_vm_guest_options(CLI::App *cmd, guest_run_options &guest, std::vector<std::string> &cases)
{
	cmd->add_option("--cases", cases, "Case ids or names, A,B (default: all)");
	cmd->add_option("--guest-cmd", guest.guest_cmd, "Run this shell command in the guest instead of the matrix (tests)");
	cmd->add_option("--fault", guest.fault,
			"Fault injection in the guest: panic-at=CASE | hang-at=CASE | kernel-hang-at=CASE | "
			"kernel-hang-in-thread-at=CASE | kernel-spin-at=CASE | kernel-oops-at=CASE | "
			"kernel-leak-pin-at=CASE");
	cmd->add_flag("--strict", guest.strict, strict_help);
	cmd->add_option("--case-timeout", guest.case_timeout_s, "Seconds a case may take in the guest")
		->check(whole_number(1, INT_MAX))
		->capture_default_str();
	cmd->add_option("--cache", guest.cache,
			std::string("Cache for kernels, modules and initramfs (") + default_cache_help + ")");
	cmd->add_option("--accel", guest.accel,
			"QEMU's accelerator: auto (KVM when /dev/kvm opens and the guest starts within " +
				std::to_string(kvm_start_bound.count()) +
				" s, else TCG; results.json's vm.accel and vm.accel_fallback say which and why), "
				"kvm (no fallback) or tcg")
		->check(CLI::IsMember({"auto", "kvm", "tcg"}))
		->capture_default_str();
	cmd->add_option("--kvm-cpu", guest.kvm_cpu, "QEMU's CPU model under KVM (-cpu)")->capture_default_str();
	cmd->add_flag("--bench", guest.bench,
		      "After the cases, run pinmatrix_bench in the guest: OUT/bench.json (default timeout 3600 s)");
	cmd->add_option("--bench-args", guest.bench_args,
			"More pinmatrix_bench arguments, e.g. '--benchmark_filter=reg_mr --benchmark_min_time=0.1'");
	add_pin_options(cmd, guest.pins, true);
	cmd->add_option("--ssh-port", guest.ssh_port,
			"Forward 127.0.0.1:PORT to sshd in the guest (QEMU user networking); the guest "
			"waits for DIR/guest/stop after its --guest-cmd")
		->check(whole_number(1024, 65535));
	cmd->add_option("--ssh-key", guest.ssh_key, "Public key the guest's sshd accepts for root (with --ssh-port)")
		->check(regular_file);
}

// vm's options on CMD (`vm` and `gate` take them all); the returned step
// completes VM from them once they are parsed.
std::function<void()> add_vm_options(CLI::App *cmd, vm_options &vm)
{
	auto cases = std::make_shared<std::vector<std::string>>();
	cmd->add_option("--out", vm.out, "Directory for results.json, serial.log and the guest's files")
		->required()
		->check(a_path);
	auto *kernel = cmd->add_option("--kernel", vm.kernel, kernel_help("debian[:ABI]"))->capture_default_str();
	auto *patch =
		cmd->add_option("--patch", vm.patches, "Patch applied to a build kernel (repeatable)")->check(patch_file);
	auto *boot = cmd->add_option("--boot", vm.boot,
				     "How the guest boots, for the memory a long-term pin may not stay in: ordinary, "
				     "movable, cma, hugetlb_cma, all")
			     ->capture_default_str();
	// One meaning per flag: --placement is `run`'s (a page placement).
	auto *placement = cmd->add_option("--placement", vm.boot)->group("");
	cmd->add_option("--append", vm.guest.append, "More kernel command line");
	cmd->add_option("--memory", vm.guest.memory_mib, "Guest RAM in MiB (default: what the boot needs)")
		->check(whole_number(256, 16384));
	cmd->add_option("--cpus", vm.guest.cpus, "Guest vCPUs (QEMU -smp, one TCG thread each)")
		->check(whole_number(1, 8))
		->capture_default_str();
	cmd->add_option("--timeout", vm.guest.timeout_s, "Seconds from QEMU start to guest power-off")
		->check(whole_number(1, INT_MAX))
		->capture_default_str();
	cmd->add_option("--matrix", vm.matrix, "A matrix file: one guest per (kernel, boot)")
		->check(regular_file)
		// The file names its kernels, patches and boots: a flag beside it
		// would be ignored.
		->excludes(kernel)
		->excludes(patch)
		->excludes(boot);
	cmd->add_option("--jobs", vm.jobs,
			"--matrix: guests at once (default: as many as the host's cores and memory hold)")
		->check(whole_number(1, 64));
	add_vm_guest_options(cmd, vm.guest, *cases);
	add_run_format_option(cmd, vm.format);
	return [&vm, cases, cmd, placement] {
		if (placement->count())
			throw usage_error("--placement: the guest's boot is --boot " + vm.boot +
					  " (--placement is `pinmatrix run`'s page placement)");
		vm.guest.cases = case_list(*cases);
		if (vm.guest.bench && !cmd->count("--timeout"))
			vm.guest.timeout_s = 3600;
	};
}

// `vm`, and `gate` (vm whose --baseline is required): with --baseline the
// run is a kernel update's gate (reports/gate.hpp).
subcommand add_vm_command(CLI::App &app, const char *name, const std::string &help, bool gate)
{
	auto vm = std::make_shared<vm_options>();
	auto against = std::make_shared<gate_options>();
	auto *cmd = with_exit_codes(app.add_subcommand(name, help), gate ? exit_codes::gate : exit_codes::run);
	auto *baseline = cmd->add_option("--baseline", against->baseline,
					 "The gate: compare with this baseline run (its directory or results.json; "
					 "the kernel before the update) and exit 1 only on a regression")
				->check(a_path);
	if (gate)
		baseline->required();
	add_latency_flag(cmd, against->compare.latency)->needs(baseline);
	cmd->add_option("--bench-threshold", against->compare.bench_threshold_pct,
			"With --baseline and --bench: a benchmark slower by more than PCT percent than the "
			"baseline's is a regression")
		->needs(baseline);
	auto complete = add_vm_options(cmd, *vm);
	return {cmd, [vm, against, complete, baseline] {
			complete();
			if (!baseline->count())
				return run_vm(*vm);
			if (!vm->guest.guest_cmd.empty() || vm->guest.ssh_port)
				throw usage_error("--baseline compares cases: it excludes --guest-cmd and --ssh-port");
			if (against->compare.bench_threshold_pct && !vm->guest.bench)
				throw usage_error("--bench-threshold goes with --bench");
			const auto old = read_baseline(*against, vm->out);
			return gated_run([vm] { return run_vm(*vm); }, old, vm->out, streams_ktap(vm->format),
					 against->compare);
		}};
}

subcommand add_vm(CLI::App &app)
{
	return add_vm_command(app, "vm", "Boot a QEMU guest (TCG) and run the matrix inside it (--baseline: as a gate)",
			      false);
}

subcommand add_gate(CLI::App &app)
{
	return add_vm_command(app, "gate",
			      "A kernel update's gate: `vm` on the new kernel, then compare with the baseline run "
			      "(the kernel before the update); exit 1 only on a regression",
			      true);
}

// bisect's options on CMD (`bisect` and the step git bisect run calls).
void add_bisect_options(CLI::App *cmd, bisect_options &b, std::vector<std::string> &cases)
{
	cmd->add_option("--tree", b.tree, "Your kernel git work tree (clean; git bisect checks out there)")
		->required()
		->check(a_path);
	cmd->add_option("--good", b.good, "A revision without the regression")->required();
	cmd->add_option("--bad", b.bad, "A revision with it (good must be its ancestor)")->required();
	cmd->add_option("--cases", cases, "The cases that show the regression, A,B")->required();
	cmd->add_option("--out", b.out, "Directory for the steps' runs, bisect.log and bisect.json")
		->required()
		->check(a_path);
	cmd->add_option("--boot", b.boot, "How each step's guest boots (as vm --boot)")->capture_default_str();
	cmd->add_option("--fragment", b.fragments,
			"Kconfig fragment on top of tinyconfig (repeatable; default vm/kconfig/pinmatrix.config)")
		->check(regular_file);
	cmd->add_option("--build", b.build, "The one build directory of every step (default OUT/build)")
		->check(a_path);
	cmd->add_option("--cache", b.cache, std::string("Cache for modules and initramfs (") + default_cache_help + ")");
	cmd->add_option("--case-timeout", b.case_timeout_s, "Seconds a case may take in the guest")
		->check(whole_number(1, INT_MAX))
		->capture_default_str();
	cmd->add_option("--timeout", b.timeout_s, "Seconds from QEMU start to guest power-off, a step")
		->check(whole_number(1, INT_MAX))
		->capture_default_str();
	cmd->add_option("--cpus", b.cpus, "Guest vCPUs")->check(whole_number(1, 8))->capture_default_str();
}

// `pinmatrix bisect`: vm/bisect.hpp.
subcommand add_bisect(CLI::App &app)
{
	auto b = std::make_shared<bisect_options>();
	auto cases = std::make_shared<std::vector<std::string>>();
	auto *cmd = with_exit_codes(app.add_subcommand("bisect",
						       "The first bad commit of a regression in your kernel git tree: git "
						       "bisect run, each step built and judged by --cases in a guest"),
				    exit_codes::bisect);
	add_bisect_options(cmd, *b, *cases);
	return {cmd, [b, cases] {
			b->cases = case_list(*cases);
			return run_bisect(*b);
		}};
}

// One step, as `git bisect run` calls it: 0 good, 1 bad, 125 skip; a step
// that could not judge its commit stops the bisect (128), never reads as
// bad.
subcommand add_bisect_step(CLI::App &app)
{
	auto b = std::make_shared<bisect_options>();
	auto cases = std::make_shared<std::vector<std::string>>();
	auto *cmd = app.add_subcommand("bisect-step", "")->group("");
	add_bisect_options(cmd, *b, *cases);
	return {cmd, [b, cases] {
			try {
				b->cases = case_list(*cases);
				return run_bisect_step(*b);
			} catch (const std::exception &e) {
				std::cerr << "pinmatrix bisect-step: " << shown_message(e.what()) << '\n';
				return 128;
			}
		}};
}

subcommand add_kernel(CLI::App &app)
{
	struct options {
		std::string spec = "build";
		std::vector<std::filesystem::path> patches;
		std::filesystem::path cache = default_cache_dir();
	};
	auto opt = std::make_shared<options>();
	auto *kernel = app.add_subcommand("kernel", "Guest kernels");
	kernel->require_subcommand(1);
	auto *build = with_exit_codes(
		kernel->add_subcommand("build",
				       "Build, fetch or lay out a kernel in the cache (or find it there); prints its dir"),
		exit_codes::kernel_build);
	build->add_option("--kernel", opt->spec, kernel_help("debian[:ABI] (fetched)"))->capture_default_str();
	build->add_option("--patch", opt->patches, "Patch to apply first (repeatable)")->check(patch_file);
	build->add_option("--cache", opt->cache, std::string("Cache directory (") + default_cache_help + ")");
	return {build, [opt] { return build_kernel(opt->spec, opt->patches, opt->cache); }};
}

subcommand add_report(CLI::App &app)
{
	struct options {
		std::filesystem::path dir, out;
		std::vector<std::filesystem::path> compare, fleet;
		std::optional<double> bench_threshold;
		std::string format, origin;
		bool latency = false;
		bool kcidb = false;
		bool mutants = false;
	};
	auto opt = std::make_shared<options>();
	auto *cmd = with_exit_codes(
		app.add_subcommand("report", "Write results.ktap, junit.xml, report.html and summary.md from "
					     "DIR/results.json, KCIDB data (--kcidb), or compare two runs"),
		exit_codes::report);
	cmd->add_option("dir", opt->dir, "Run directory (or its results.json)");
	cmd->add_option("--compare", opt->compare, "OLD NEW: run directories or results.json files")->expected(2);
	cmd->add_option("--bench-threshold", opt->bench_threshold,
			"With --compare: exit 1 when a benchmark's median is slower by more than PCT percent "
			"(without it, benchmarks are informational)");
	add_latency_flag(cmd, opt->latency);
	add_format_option(cmd, opt->format,
			  {{"text", "with --compare, the comparison for people (the default)"},
			   {"md", "a Markdown table for a ticket"},
			   {"json", "every row, for machines"}});
	cmd->add_option("--fleet", opt->fleet,
			"NODE_DIR...: one node x case report from each node's status.json, facts.json "
			"and results.json (ansible/roles/collect)")
		->expected(1, -1);
	cmd->add_flag("--kcidb", opt->kcidb,
		      "With DIR: write KCIDB I/O data (schema 4.5: checkouts, builds, tests) to DIR/kcidb.json "
		      "or --out FILE");
	cmd->add_option("--origin", opt->origin, "With --kcidb: the CI system's name in KCIDB (^[a-z0-9_]+$)");
	cmd->add_flag("--mutants", opt->mutants,
		      "With DIR, a merged run of the mutant kernels (tools/run-mutants): each kernel mutant x "
		      "(kernel, boot) -> the cases that caught it; exit 1 for one not caught, or a failure "
		      "without a mutant");
	cmd->add_option("--out", opt->out,
			"Where the reports go (created): with DIR, instead of next to its results.json; "
			"with --fleet, required; with --kcidb, the file (- for stdout)")
		->check(a_path);
	return {cmd, [opt, cmd] {
			if (opt->mutants) {
				if (opt->kcidb || !opt->compare.empty() || !opt->fleet.empty() || !opt->format.empty() ||
				    opt->bench_threshold || opt->latency || !opt->out.empty() || opt->dir.empty() ||
				    cmd->count("--origin"))
					throw usage_error("report --mutants takes a run directory alone");
				return mutants_report_command(opt->dir);
			}
			if (opt->kcidb) {
				if (!opt->compare.empty() || !opt->fleet.empty() || !opt->format.empty() ||
				    opt->bench_threshold || opt->latency)
					throw usage_error("report --kcidb excludes --compare, --fleet, --format, "
							  "--bench-threshold and --latency");
				kcidb_report_command(opt->dir, opt->origin, opt->out);
				return 0;
			}
			if (cmd->count("--origin"))
				throw usage_error("report: --origin goes with --kcidb");
			if (opt->fleet.empty())
				return report_command(opt->dir, opt->compare, opt->bench_threshold, opt->format, opt->out,
						      opt->latency);
			if (!opt->dir.empty() || !opt->compare.empty() || !opt->format.empty() || opt->bench_threshold ||
			    opt->latency)
				throw usage_error("report --fleet excludes a run directory, --compare, --format, "
						  "--bench-threshold and --latency");
			return fleet_report_command(opt->fleet, opt->out);
		}};
}

// `explain -- CMD ARGS...`: what follows "--" is the command, not ours; the
// arguments CLI11 parses end before it.
subcommand add_explain(CLI::App &app, std::vector<std::string> command)
{
	auto opt = std::make_shared<explain_options>();
	opt->command = std::move(command);
	auto pid = std::make_shared<int>(0);
	auto format = std::make_shared<std::string>("text");
	auto *cmd = with_exit_codes(
		app.add_subcommand("explain", "Where the pages of PID's RANGE live, its memlock state and what an "
					      "ENOMEM from registering them would mean; or, with -- CMD ARGS, run CMD "
					      "and explain its failed registrations"),
		exit_codes::explain);
	cmd->add_option("pid", *pid, "Process id");
	cmd->add_option("range", opt->range, "START-END (hex), START+LENGTH (bytes, K, M, G) or START (one page)");
	auto *as_json = add_format_option(cmd, *format,
					  {{"text", "the explanation for people"},
					   {"json", "the explanation as data (CMD's own output goes to stderr)"}})
				->capture_default_str();
	// The old spelling, kept: tests/vm/explain-guest.sh and scripts use it.
	cmd->add_flag("--json", opt->json, "The same as --format json")->excludes(as_json);
	return {cmd, [opt, pid, cmd, format] {
			if (cmd->count("pid"))
				opt->pid = *pid;
			opt->json = opt->json || *format == "json";
			return explain(*opt, std::cout);
		}};
}

// Where `explain`'s "--" is: the argc CLI11 parses and the command after it.
// nullopt (and one line) for "--" with no command.
std::optional<std::pair<int, std::vector<std::string>>> split_explain(int argc, char **argv)
{
	if (argc > 1 && std::string(argv[1]) == "explain")
		for (int i = 2; i < argc; i++)
			if (std::string(argv[i]) == "--") {
				if (i + 1 == argc) {
					std::cerr << "pinmatrix: explain --: no command given\n";
					return std::nullopt;
				}
				return std::make_pair(i, std::vector<std::string>(argv + i + 1, argv + argc));
			}
	return std::make_pair(argc, std::vector<std::string>{});
}

// `pinmatrix frob`: one line naming the commands.
bool known_command(CLI::App &app, int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-')
		return true;
	for (const auto *sub : app.get_subcommands({}))
		if (sub->get_name() == argv[1])
			return true;
	std::cerr << "pinmatrix: unknown command '" << argv[1]
		  << "' (commands: cases, promises, run, vm, gate, bisect, kernel, report, explain; see --help)\n";
	return false;
}

// The chosen subcommand's run; bad usage as one line and 2, an unmet need
// as one line and 4.
int run_chosen(const std::vector<subcommand> &subs)
{
	try {
		for (const auto &s : subs)
			if (*s.app)
				return s.run();
	} catch (const usage_error &e) {
		std::cerr << "pinmatrix: " << shown_message(e.what()) << '\n';
	} catch (const unmet_need &e) {
		std::cerr << "pinmatrix: cannot run here: " << shown_message(e.what()) << '\n';
		return exit_cannot_run;
	} catch (const std::exception &e) {
		std::cerr << "pinmatrix: " << shown_message(e.what()) << '\n';
	}
	return exit_usage;
}

// The man page's date: the source's (SOURCE_DATE_EPOCH, as Debian's
// builds set it from the changelog), so that the page builds the same
// every time; none without it.
std::string source_date()
{
	const char *epoch = std::getenv("SOURCE_DATE_EPOCH");
	if (!epoch || !*epoch)
		return {};
	char *end = nullptr;
	errno = 0;
	const long long t = std::strtoll(epoch, &end, 10);
	if (errno || *end || t < 0)
		return {};
	const std::time_t time = t;
	char buf[16];
	std::tm tm{};
	gmtime_r(&time, &tm);
	return std::strftime(buf, sizeof(buf), "%Y-%m-%d", &tm) ? buf : "";
}

} // namespace

int main(int argc, char **argv)
{
	CLI::App app{"pinmatrix: does a page pass its strongest placement contract before "
		     "anything makes it immovable?"};
	app.require_subcommand(1);
	app.set_version_flag("--version", "pinmatrix " + suite_version_text());
	const auto split = split_explain(argc, argv);
	if (!split)
		return exit_usage;
	const std::vector<subcommand> subs = {add_cases(app),	   add_promises(app), add_run(app),
					      add_vm(app),	   add_gate(app),     add_bisect(app),
					      add_bisect_step(app), add_kernel(app),   add_report(app),
					      add_explain(app, split->second)};
	if (argc == 2 && std::string_view(argv[1]) == "--manpage") {
		std::cout << manpage(app, suite_version_text(), source_date());
		return 0;
	}
	if (!known_command(app, argc, argv))
		return exit_usage;
	try {
		app.parse(split->first, argv);
	} catch (const CLI::ParseError &e) {
		return parse_error(app, e) ? exit_usage : 0;
	}
	return run_chosen(subs);
}
