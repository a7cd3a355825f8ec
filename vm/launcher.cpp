// SPDX-License-Identifier: GPL-2.0
// `pinmatrix vm` as named steps. Its groups (vm/matrix_groups.hpp), each
// with its plan, made once; for each group, its kernel prepared, the
// guest's job written (vm/guest_job.hpp), the guest booted
// (vm/guest_boot.hpp, QEMU's command line: vm/qemu_command.hpp) and its
// results merged (vm/guest_results.hpp); then one guest's report, or the
// matrix's.
#include "launcher.hpp"

#include <bit>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "clock.hpp"
#include "accel.hpp"
#include "bench_vm.hpp"
#include "cache_lock.hpp"
#include "guest_boot.hpp"
#include "guest_job.hpp"
#include "guest_results.hpp"
#include "kernel_info.hpp"
#include "ktap.hpp"
#include "matrix_groups.hpp"
#include "parallel_groups.hpp"
#include "pin/plan.hpp"
#include "qemu_command.hpp"
#include "reports.hpp"
#include "results.hpp"
#include "runner.hpp"
#include "serial_log.hpp"
#include "sys_error.hpp"
#include "terminal_table.hpp"
#include "user_input.hpp"
#include "virtiofs.hpp"

namespace pinmatrix {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The prepared kernel in the group's record: its release, what it is, the
// patches and fragments it was built with.
void note_kernel(json &record, const kernel_spec &spec, const guest_kernel &k)
{
	record["release"] = k.release;
	record["describe"] = k.describe();
	json patches = json::array();
	for (const auto &f : spec.patches)
		patches.push_back(f.filename().string());
	record["patches"] = patches;
	if (!spec.fragments.empty()) {
		json fragments = json::array();
		for (const auto &f : spec.fragments)
			fragments.push_back(f.filename().string());
		record["fragments"] = fragments;
	}
}

// Kernel, modules, initramfs; then the kernel's config against the
// placement's needs. What stops it is the group's SKIP with the reason (no
// boot); a setup error (doc["setup_error"]) also writes nothing.
std::optional<std::string> prepare_guest(const group_spec &g, json &doc, prepared_guest &p)
{
	step_clock clock;
	try {
		cache_entry_lock kernel_lock(g.guest.cache, kernel_lock_name(g.kernel), "kernel '" + g.kernel.name + "'",
					     std::cerr);
		p.kernel = prepare_kernel(g.kernel, g.guest.cache);
		clock.mark("kernel");
		note_kernel(doc["kernel"], g.kernel, p.kernel);
		if (auto cannot = unmet_kconfig(*g.boot, p.kernel.config, p.kernel.release))
			return cannot;
		if (p.kernel.share == share_transport::virtiofs)
			if (std::string why = virtiofs_unmet(); !why.empty())
				return why;
		cache_entry_lock entry_lock(g.guest.cache, "entry-" + p.kernel.dir.filename().string(),
					    "the test modules and initramfs of " + p.kernel.dir.string(), std::cerr);
		p.modules = prepare_modules(p.kernel, g.guest.cache);
		clock.mark("test modules");
		p.initrd = prepare_initramfs(p.kernel, g.guest.cache);
		clock.mark("initramfs");
		p.prepare_ms = clock.steps();
		if (const std::string said = prepared_text(p.prepare_ms); !said.empty())
			say_line("pinmatrix vm: " + g.label + said);
		return std::nullopt;
	} catch (const unmet_need &e) {
		doc["setup_error"] = true;
		return e.what();
	} catch (const std::exception &e) {
		// Whatever else stops it (a cache that cannot be locked, an I/O
		// error) is this group's SKIP with the reason, not the matrix's end.
		doc["setup_error"] = true;
		return "cannot prepare kernel '" + g.kernel.name + "': " + e.what();
	}
}

// What an earlier run left in the group's dir goes before this one writes.
void clear_group_dir(const group_spec &g)
{
	fs::create_directories(g.out);
	fs::remove_all(g.out / "guest");
	fs::remove(g.out / "results.json");
	fs::remove(g.out / "serial-boot-1.log");
}

// What the guest's kernel changes in its job, said, and recorded in
// NOTES (results.json's vm.share, vm.second_pin, vm.modules_left_out):
// the host share (9p, else virtiofs); without Soft-RoCE (Debian's cloud
// kernels) the long-term pin is io_uring's fixed buffers unless
// --second-pin named one; a test module the kernel cannot have (no DRM:
// ualink_sim) is left out and its cases SKIP.
group_spec fit_to_kernel(const group_spec &g, const prepared_guest &p, json &notes)
{
	group_spec fitted = g;
	notes["share"] = name(p.kernel.share);
	const std::string rxe = kconfig_value(p.kernel.config, "CONFIG_RDMA_RXE");
	if (!runs_no_plan(g) && !g.guest.pins.second_pin_named && rxe != "y" && rxe != "m") {
		fitted.guest.pins.second_pin = "io_uring";
		notes["second_pin"] = {{"name", "io_uring"}, {"why", "the kernel has no CONFIG_RDMA_RXE (Soft-RoCE)"}};
		say_line("pinmatrix vm: " + g.label + p.kernel.release +
			 " has no Soft-RoCE (CONFIG_RDMA_RXE): the long-term pin is io_uring's fixed buffers "
			 "(--second-pin names another)");
	}
	for (const auto &[module, why] : modules_left_out(p.modules)) {
		notes["modules_left_out"][module] = why;
		say_line("pinmatrix vm: " + g.label + module + ".ko left out for " + p.kernel.release + ": " +
			 report::one_line(why));
	}
	return fitted;
}

// A group whose guest cannot boot here: each case's SKIP, with why.
group_outcome cannot_boot(group_outcome outcome, const guest_plan &plan, const std::string &why)
{
	outcome.ended = why;
	outcome.doc["cases"] = records_not_run(plan, verdict::skip, why);
	outcome.doc["cannot_run"] = why;
	return outcome;
}

// "pinmatrix vm: booting debian 6.1.0-57-amd64 (movable: movablecore=512M,
// 1024 MiB, 1 vCPU, TCG)"
void say_booting(const group_spec &g, const guest_kernel &kernel)
{
	const std::string append = boot_append(g);
	const unsigned cpus = g.guest.cpus;
	const accel_choice accel = choose_accel(g.guest.accel, g.guest.cache, g.guest.kvm_cpu);
	std::ostringstream booting;
	booting << "pinmatrix vm: " << g.label << "booting " << kernel.describe() << " (" << g.boot->name << ": "
		<< (append.empty() ? "no extra parameters" : append) << ", " << guest_memory_mib(g) << " MiB, " << cpus
		<< (cpus == 1 ? " vCPU" : " vCPUs") << ", "
		<< (accel.accel == "tcg" ? "TCG" : accel.may_fall_back ? "KVM, else TCG" : "KVM") << ")";
	say_line(booting.str());
}

// A command's guest (--guest-cmd) or a managed node at its end: the job's
// exit when the guest ended as it should, the console's lines when not.
void note_command_end(group_outcome &outcome, const group_spec &g, const std::optional<int> &job_status, json vm)
{
	outcome.guest_cmd_exit = outcome.ended.empty() ? job_status : std::nullopt;
	outcome.doc["vm"] = std::move(vm);
	if (!outcome.ended.empty())
		outcome.doc["vm"]["serial_excerpt"] = serial_excerpt(g.out / "serial.log");
}

// The plan's end: the guest's results merged, every planned case it did
// not report an error with why, the benchmarks' results.
void collect_case_results(group_outcome &outcome, const group_spec &g, const guest_plan &plan,
			  const std::optional<int> &job_status, json vm)
{
	json &doc = outcome.doc;
	std::string &ended = outcome.ended;
	const fs::path guest_dir = g.out / "guest";
	merge_guest_results(doc, guest_dir, ended);
	if (!doc.value("complete", false) && ended.empty())
		ended = "the guest's run ended early (job exit " +
			(job_status ? std::to_string(*job_status) : std::string("none")) + ", see serial.log)";
	const std::string excerpt = ended.empty() ? "" : serial_excerpt(g.out / "serial.log");
	add_missing_records(doc, g, plan, ended, job_status, excerpt);
	if (g.guest.bench)
		bench::collect(guest_dir, g.out, doc);
	if (auto h = harness_share(doc["cases"], vm.value("wall_s", 0.0)); !h.empty())
		vm["harness"] = h;
	doc["vm"] = std::move(vm);
	if (!ended.empty())
		doc["vm"]["serial_excerpt"] = excerpt;
}

// What the boot came to: how it ended, the kernel's log, the boot's
// record; then the command's exit, or the cases' results.
void judge_boot(group_outcome &outcome, const group_spec &g, const guest_plan &plan, const booted_guest &booted,
		const std::string &cmdline)
{
	const fs::path guest_dir = g.out / "guest";
	const auto job_status = guest_job_exit(g.out);
	outcome.ended = how_it_ended(booted.q, job_status, g.guest.timeout_s);
	if (!booted.retries.empty() && died_before_its_job(booted.q, guest_dir))
		outcome.ended += "; its kernel ended before the job on both boots (serial-boot-1.log, serial.log)";
	outcome.kernel_alarms = note_guest_kernel_log(guest_dir, outcome.doc);
	json vm = vm_record(g, booted, cmdline, job_status, outcome.ended);
	if (runs_no_plan(g))
		note_command_end(outcome, g, job_status, std::move(vm));
	else
		collect_case_results(outcome, g, plan, job_status, std::move(vm));
}

// Boots one guest (or finds that it cannot) and returns its results;
// progress(), when given, sees its record as it grows (watch_guest()).
group_outcome run_group(const group_spec &g, const guest_plan &plan, const group_progress &progress)
{
	group_outcome outcome;
	outcome.doc = group_doc(g);
	prepared_guest guest;
	const auto cannot = prepare_guest(g, outcome.doc, guest);
	// Only now is anything written: a setup error leaves nothing behind.
	if (!outcome.doc.contains("setup_error"))
		clear_group_dir(g);
	if (cannot)
		return cannot_boot(std::move(outcome), plan, *cannot);
	json fitted = json::object();
	write_guest_job(g.out / "guest", fit_to_kernel(g, guest, fitted), plan.needs, guest.modules);
	const std::string cmdline = guest_cmdline(guest.kernel.dir, guest.kernel.share, g, plan.needs);
	say_booting(g, guest.kernel);
	const booted_guest booted = boot_until_its_job_starts(g, guest, plan.needs, cmdline,
							      watch_guest(outcome.doc, g.out / "guest", progress));
	judge_boot(outcome, g, plan, booted, cmdline);
	outcome.doc["vm"]["prepare_ms"] = step_times_json(guest.prepare_ms);
	outcome.doc["vm"].update(fitted);
	return outcome;
}

// A command's guest (--guest-cmd) or a managed node: the job's log, then
// its exit (a kernel bug report fails it) or why there is none.
int command_exit(const group_spec &g, const group_outcome &outcome, double wall_s)
{
	const json &doc = outcome.doc;
	const fs::path log = g.out / "guest" / "job.log";
	if (fs::exists(log))
		std::cout << read_text_file(log.string());
	if (!outcome.guest_cmd_exit) {
		std::cerr << "pinmatrix vm: ERROR: " << outcome.ended << "\n";
		if (doc.contains("vm"))
			std::cerr << doc["vm"].value("serial_excerpt", "");
		return doc.contains("cannot_run") ? 4 : 1;
	}
	std::printf("pinmatrix vm: guest command exit %d, %.1f s\n", *outcome.guest_cmd_exit, wall_s);
	return with_kernel_alarms(*outcome.guest_cmd_exit, outcome.kernel_alarms);
}

// results.json and the reports beside it: "" when written, else why not
// (a full disk; results.json is never half-written).
std::string write_group_reports(const fs::path &out, const json &doc)
{
	try {
		write_reports(out, doc, {{"results.json", results_json_text(doc)}});
	} catch (const std::exception &e) {
		return e.what();
	}
	return "";
}

// The cases' table, how the guest ended, the run's line.
void print_single(const group_spec &g, const group_outcome &outcome, double wall_s, const std::string &not_written)
{
	const json &doc = outcome.doc;
	std::cout << '\n' << format_table_for_stdout(doc["cases"]);
	// No "vm" when the guest never booted (the kernel cannot run the boot).
	const json vm = doc.value("vm", json::object());
	if (doc.contains("cannot_run"))
		std::cout << "cannot run here: " << outcome.ended << "\n";
	else if (!outcome.ended.empty())
		std::cout << "guest: " << outcome.ended << "\n" << vm.value("serial_excerpt", "");
	std::printf("pinmatrix vm: %s in %.1f s (boot to verdict%s%s); results in %s\n",
		    doc["verdict"].get<std::string>().c_str(), wall_s,
		    phases_text(vm.value("phases_s", json::object())).c_str(), harness_text(vm).c_str(),
		    not_written.empty() ? (g.out / "results.json").c_str() : "none (not written, see below)");
}

// The cases' exit code (a kernel bug report fails it); 1 for results not
// written (saying what is kept) or benchmarks that did not run cleanly.
int single_exit(const group_spec &g, const json &doc, const std::string &not_written)
{
	const int rc = with_kernel_alarms(exit_code(summarize_json(doc["cases"])),
					  report::unexplained_kernel_alarms(doc));
	if (!not_written.empty()) {
		std::cerr << "pinmatrix vm: ERROR: results not written: " << not_written << "; "
			  << (fs::exists(g.out / "results.json") ? "results.json is an earlier, whole one"
								   : "there is no results.json")
			  << "; the guest's own results (as far as it could write them) are in "
			  << (g.out / "guest" / "results.json").string() << std::endl;
		return 1;
	}
	if (g.guest.bench && !bench::print_summary(doc, std::cout))
		return rc ? rc : 1;
	return rc;
}

int run_single(const vm_options &opt)
{
	const planned_group one = single_group(opt); // checked before anything is written
	const group_spec &g = one.spec;
	guest_ktap ktap(opt.format, ktap_plan{false, {suite_sizes(one.plan.entries)}});
	const auto t0 = std::chrono::steady_clock::now();
	auto outcome = run_group(g, one.plan, ktap.progress(one.plan.entries.size()));
	const double wall_s = seconds_since(t0) - prepared_seconds(outcome.doc.value("vm", json::object()));	// boot to verdict
	json &doc = outcome.doc;
	// One guest that cannot be prepared (no such kernel, no headers) is a
	// setup error; in a matrix it is that group's SKIP instead.
	if (doc.contains("setup_error")) {
		ktap.rest_of(doc);	// its cases' SKIPs, for a runner that reads no exit code
		ktap.end(doc);
		throw unmet_need(outcome.ended);
	}
	if (runs_no_plan(g))
		return command_exit(g, outcome, wall_s);
	label_cases(doc);
	summarize_into(doc);
	ktap.rest_of(doc);
	ktap.end(doc);
	const std::string not_written = write_group_reports(g.out, doc);
	print_single(g, outcome, wall_s, not_written);
	return single_exit(g, doc, not_written);
}

// Each group's table, then the matrix's line. The cases are sorted into
// their groups in one pass: linear in cases and groups.
void print_matrix(const json &merged, double wall_s, const fs::path &results)
{
	std::map<std::pair<std::string, std::string>, json> by_group;	// (kernel name, placement) -> cases
	for (const auto &c : merged["cases"]) {
		auto &cases = by_group[{c["kernel"].value("name", ""), c["boot"].value("placement", "")}];
		if (cases.is_null())
			cases = json::array();
		cases.push_back(c);
	}
	for (const auto &group : merged["groups"]) {
		std::cout << "\n== " << group["kernel"].value("name", "") << " (" << group["kernel"].value("release", "?")
			  << ") / " << group["boot"].value("placement", "") << ": " << group["verdict"].get<std::string>()
			  << "\n";
		const auto it = by_group.find({group["kernel"].value("name", ""), group["boot"].value("placement", "")});
		std::cout << format_table_for_stdout(it == by_group.end() ? json::array() : it->second);
	}
	std::printf("pinmatrix vm: matrix %s in %.1f s; results in %s\n", merged["verdict"].get<std::string>().c_str(),
		    wall_s, results.c_str());
}

// A matrix run: its groups, where it writes, what it has merged so far.
struct matrix_run {
	std::vector<planned_group> groups;
	fs::path out;
	json merged;
};

// The matrix's groups, checked; its dir, without an earlier run's
// results.json; its record, with no group yet.
matrix_run start_matrix(const vm_options &opt)
{
	matrix_run m;
	m.groups = matrix_groups(opt);
	m.out = fs::absolute(opt.out);
	fs::create_directories(m.out);
	fs::remove(m.out / "results.json");
	m.merged = {{"schema", results_schema},
		    {"tool", tool_json()},
		    {"matrix", fs::absolute(opt.matrix).string()},
		    {"groups", json::array()},
		    {"cases", json::array()}};
	return m;
}

// KTAP's plan: one subtest per group, in it one per suite.
ktap_plan matrix_ktap_plan(const matrix_run &m)
{
	ktap_plan plan{true, {}};
	for (const auto &g : m.groups)
		plan.groups.push_back(suite_sizes(g.plan.entries));
	return plan;
}

// "[group 3/8] debian-6.12 / movable": where the matrix is.
std::string group_line(const matrix_run &m, size_t k)
{
	const group_spec &g = m.groups[k].spec;
	return "[group " + std::to_string(k + 1) + "/" + std::to_string(m.groups.size()) + "] " + g.kernel.name +
	       " / " + g.boot->name;
}

// The merged results.json as groups end: after the 1st, 2nd, 4th, 8th ...
// group (each group's own results.json is written as it ends; the merged
// one whole at the matrix's end). Each write is the whole document, so
// writing after every group was quadratic in groups (200 groups that did
// not boot: 22.6 s of CPU); these writes add up to twice the end's.
void write_merged_so_far(matrix_run &m)
{
	if (!std::has_single_bit(m.merged["groups"].size()))
		return;
	summarize_into(m.merged);
	write_file_set(m.out, {{"results.json", results_json_text(m.merged)}});
}

// A group's end, in the matrix's order: merged, reported, said.
void finish_group(matrix_run &m, size_t k, group_outcome &outcome, guest_ktap &ktap)
{
	const group_spec &g = m.groups[k].spec;
	merge_group(g, outcome, m.out, m.merged);
	ktap.rest_of(outcome.doc);
	ktap.end_group(m.merged["groups"].back());
	write_merged_so_far(m);
	say_line("  " + g.kernel.name + " / " + g.boot->name + ": " + outcome.doc["verdict"].get<std::string>() +
		 (outcome.ended.empty() ? "" : " (" + outcome.ended + ")"));
}

// One guest at a time: each case's KTAP as it ends.
void run_groups_one_at_a_time(matrix_run &m, guest_ktap &ktap)
{
	for (size_t k = 0; k < m.groups.size(); k++) {
		const planned_group &group = m.groups[k];
		say_line("pinmatrix vm: " + group_line(m, k));
		auto outcome = run_group(group.spec, group.plan, ktap.progress(group.plan.entries.size()));
		finish_group(m, k, outcome, ktap);
	}
}

// Up to `at_once` guests side by side, each group's lines after its label;
// merged, reported and streamed in the matrix's order.
void run_groups_side_by_side(matrix_run &m, guest_ktap &ktap, unsigned at_once)
{
	std::vector<group_progress> progress;
	for (auto &[g, plan] : m.groups) {
		g.label = "[" + g.kernel.name + " / " + g.boot->name + "] ";
		progress.push_back(ktap.progress(plan.entries.size(), g.label));
	}
	run_in_order<group_outcome>(
		m.groups.size(), at_once, [&](size_t k) { say_line("pinmatrix vm: " + group_line(m, k)); },
		[&](size_t k) { return run_group(m.groups[k].spec, m.groups[k].plan, progress[k]); },
		[&](size_t k, group_outcome &outcome) { finish_group(m, k, outcome, ktap); });
}

// Guests at once for this matrix: --jobs, else what the host holds (why).
unsigned matrix_guests_at_once(const vm_options &opt, const matrix_run &m, std::string &why)
{
	std::vector<unsigned> memory, cpus;
	for (const auto &group : m.groups) {
		memory.push_back(guest_memory_mib(group.spec));
		cpus.push_back(group.spec.guest.cpus);
	}
	return guests_at_once(opt.jobs, memory, cpus, this_host(), why);
}

int run_matrix_file(const vm_options &opt)
{
	matrix_run m = start_matrix(opt);
	std::string why;
	const unsigned at_once = matrix_guests_at_once(opt, m, why);
	guest_ktap ktap(opt.format, matrix_ktap_plan(m), at_once == 1);
	ktap.header(m.merged);
	say_line("pinmatrix vm: " + std::to_string(m.groups.size()) + " groups, " + std::to_string(at_once) +
		 (at_once == 1 ? " guest" : " guests") + " at a time (" + why + ")");
	const auto t0 = std::chrono::steady_clock::now();
	if (at_once == 1)
		run_groups_one_at_a_time(m, ktap);
	else
		run_groups_side_by_side(m, ktap, at_once);
	const double wall_s = seconds_since(t0);
	m.merged["wall_s"] = wall_s;
	m.merged["guests_at_once"] = at_once;
	summarize_into(m.merged);
	ktap.end(m.merged);
	write_reports(m.out, m.merged, {{"results.json", results_json_text(m.merged)}});
	print_matrix(m.merged, wall_s, m.out / "results.json");
	return with_kernel_alarms(exit_code(summarize_json(m.merged["cases"])),
				  report::unexplained_kernel_alarms(m.merged));
}

} // namespace

int run_vm(const vm_options &opt)
{
	const guest_run_options &guest = opt.guest;
	// Everything that can be wrong with the arguments is found before
	// anything is written.
	if (streams_ktap(opt.format) && (!guest.guest_cmd.empty() || guest.ssh_port))
		throw usage_error("--format ktap reports cases: it excludes --guest-cmd and --ssh-port");
	if (opt.out.empty())
		throw usage_error("--out is required");
	require_writable_dir(opt.out, "--out");
	require_writable_dir(guest.cache, "--cache");
	check_kvm_cpu(guest.kvm_cpu);
	parse_fault(guest.fault);
	if (!guest.guest_cmd.empty() && (!guest.cases.empty() || !guest.fault.empty() || !opt.matrix.empty()))
		throw usage_error("--guest-cmd excludes --cases, --fault and --matrix");
	if (guest.append.find_first_of("\"'\n") != std::string::npos)
		throw usage_error("--append must not contain quotes or newlines");
	check(guest.pins);
	if (guest.ssh_port && (guest.ssh_key.empty() || !opt.matrix.empty() || !guest.cases.empty() || !guest.fault.empty()))
		throw usage_error("--ssh-port needs --ssh-key and excludes --matrix, --cases and --fault");
	// An option whose partner is missing would be ignored in silence.
	if (!guest.ssh_key.empty() && !guest.ssh_port)
		throw usage_error("--ssh-key goes with --ssh-port");
	if (!guest.bench_args.empty() && !guest.bench)
		throw usage_error("--bench-args goes with --bench");
	if (guest.bench && (!guest.guest_cmd.empty() || !opt.matrix.empty() || guest.ssh_port))
		throw usage_error("--bench excludes --guest-cmd, --matrix and --ssh-port");
	if (opt.jobs && opt.matrix.empty())
		throw usage_error("--jobs goes with --matrix (guests at once)");
	if (guest.bench)
		bench::bench_binary(); // there, before anything is written
	if (const std::string unfit = host_root_unfit_for_guest(); !unfit.empty())
		throw unmet_need(unfit);
	return opt.matrix.empty() ? run_single(opt) : run_matrix_file(opt);
}

int build_kernel(const std::string &spec_text, const std::vector<fs::path> &patches, const fs::path &cache)
{
	kernel_spec spec = parse_kernel_spec(spec_text);
	if (!patches.empty() && spec.source != "build")
		throw usage_error("--patch applies to build kernels only");
	spec.patches = patches;
	require_writable_dir(cache, "--cache");
	// Before the lock: a host without flex writes nothing in the cache.
	require_build_tools_for(spec);
	cache_entry_lock lock(cache, kernel_lock_name(spec), "kernel '" + spec.name + "'", std::cerr);
	const auto k = prepare_kernel(spec, cache);
	std::cout << k.dir.string() << "\n";
	return 0;
}

} // namespace pinmatrix
