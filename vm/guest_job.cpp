// SPDX-License-Identifier: GPL-2.0
#include "guest_job.hpp"

#include <fstream>
#include <sstream>

#include "bench_vm.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

namespace {

std::string shell_quote(const std::string &s)
{
	std::string q = "'";
	for (char c : s)
		q += c == '\'' ? std::string("'\\''") : std::string(1, c);
	return q + "'";
}

std::string shell_array(const std::vector<std::string> &argv)
{
	std::string out = "(";
	for (const auto &a : argv)
		out += (out.size() > 1 ? " " : "") + shell_quote(a);
	return out + ")";
}

std::string self_exe()
{
	return fs::read_symlink("/proc/self/exe").string();
}

// `pinmatrix run ...` as the guest runs it.
std::vector<std::string> guest_run_argv(const group_spec &g, const fs::path &ko)
{
	const guest_run_options &o = g.guest;
	// The host writes the reports, from the merged results.
	std::vector<std::string> argv = {self_exe(), "run", "--out", "/run/pinmatrix", "--results-only", "--device", "rxe0",
					 "--placement", std::string(name(g.boot->restricted)), "--second-pin",
					 o.pins.second_pin};
	if (o.pins.without_module())
		argv.push_back("--no-module");
	else
		argv.insert(argv.end(), {"--module", ko.string(), "--first-pin", o.pins.first_pin});
	if (!o.cases.empty()) {
		std::string list;
		for (const auto &c : o.cases)
			list += (list.empty() ? "" : ",") + c;
		argv.insert(argv.end(), {"--cases", list});
	}
	if (!o.fault.empty())
		argv.insert(argv.end(), {"--fault", o.fault});
	argv.insert(argv.end(), {"--case-timeout", std::to_string(o.case_timeout_s)});
	if (o.strict)
		argv.push_back("--strict");
	return argv;
}

} // namespace

std::string guest_job_env(const group_spec &g, const guest_needs &needs, const fs::path &modules)
{
	const guest_run_options &o = g.guest;
	const fs::path ko = modules / "pinmatrix" / "pinmatrix.ko";
	const char *mode = o.ssh_port ? "ssh" : !o.guest_cmd.empty() ? "command" : "matrix";
	std::ostringstream env;
	env << "# Written by pinmatrix vm: what vm/guest/job.sh runs in the guest.\n"
	    << "job_mode=" << mode << "\n"
	    << "modules=" << shell_quote(modules.string()) << "\n"
	    << "module_ko=" << shell_quote(ko.string()) << "\n"
	    << "ualink_sim_ko=" << shell_quote((modules / "ualink_sim" / "ualink_sim.ko").string()) << "\n"
	    << "load_test_modules=" << (o.pins.without_module() ? 0 : 1) << "\n"
	    << "disk_dir=" << needs.disk_dir << "\n"
	    << "vdpa_sim=" << needs.vdpa_sim << "\n"
	    << "vfio_edu=" << needs.vfio_edu << "\n"
	    << "guest_cmd=" << shell_quote(o.guest_cmd) << "\n"
	    << "ssh_key=" << shell_quote(o.ssh_key.string()) << "\n"
	    << "ssh_port=" << o.ssh_port << "\n"
	    << "run_argv=" << shell_array(guest_run_argv(g, ko)) << "\n"
	    << "bench_argv="
	    << shell_array(o.bench ? bench::guest_argv(bench::bench_binary(), o.bench_args, ko)
				   : std::vector<std::string>{})
	    << "\n";
	return env.str();
}

void write_guest_job(const fs::path &guest_dir, const group_spec &g, const guest_needs &needs,
		     const fs::path &modules)
{
	fs::create_directories(guest_dir);
	std::ofstream job(guest_dir / "job.env");
	job << guest_job_env(g, needs, modules);
	if (!job)
		throw last_sys_error("write job.env");
}

} // namespace pinmatrix
