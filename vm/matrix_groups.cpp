// SPDX-License-Identifier: GPL-2.0
#include "matrix_groups.hpp"

#include <algorithm>

#include "matrix_file.hpp"
#include "qemu_command.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

namespace {

// What every group of the run shares: the command line's guest options (a
// managed node's key as an absolute path).
group_spec base_group(const vm_options &opt)
{
	group_spec g;
	g.guest = opt.guest;
	if (!g.guest.ssh_key.empty())
		g.guest.ssh_key = fs::absolute(g.guest.ssh_key);
	return g;
}

// What one guest asks for, checked before anything is written or locked;
// its plan.
guest_plan check_group(const group_spec &g)
{
	check_guest_paths(g);
	if (g.guest.memory_mib && g.guest.memory_mib < g.boot->memory_mib)
		throw usage_error("--memory " + std::to_string(g.guest.memory_mib) + ": boot " + g.boot->name +
				  " needs at least " + std::to_string(g.boot->memory_mib) + " MiB");
	guest_plan plan = make_guest_plan(g);
	check_cmdline_length(g, plan.needs);
	return plan;
}

// "-pinmatrix_mutant=3" for a group's own command line, "" for none: its
// directory's name stays one word.
std::string dir_part(const std::string &append)
{
	std::string out = append.empty() ? "" : "-" + append;
	std::replace(out.begin(), out.end(), ' ', '_');
	return out;
}

// A matrix file's group: its kernel, boot, cases, append and memory over
// the command line's.
group_spec file_group(const vm_options &opt, const matrix_group &mg)
{
	group_spec g = base_group(opt);
	g.kernel = parse_kernel_spec(mg.kernel.spec);
	g.kernel.name = mg.kernel.name;
	g.kernel.patches = mg.kernel.patches;
	g.boot = &find_boot_placement(mg.boot);
	if (opt.guest.cases.empty())
		g.guest.cases = mg.cases;
	if (!mg.append.empty())
		g.guest.append = g.guest.append.empty() ? mg.append : g.guest.append + " " + mg.append;
	if (mg.memory_mib)
		g.guest.memory_mib = mg.memory_mib;
	g.out = fs::absolute(opt.out) / "groups" / (mg.kernel.name + "-" + mg.boot + dir_part(mg.append));
	return g;
}

} // namespace

planned_group single_group(const vm_options &opt)
{
	group_spec g = base_group(opt);
	g.kernel = parse_kernel_spec(opt.kernel);
	g.kernel.patches = opt.patches;
	if (!opt.patches.empty() && g.kernel.source != "build")
		throw usage_error("--patch applies to build kernels only");
	g.boot = &find_boot_placement(opt.boot);
	g.out = fs::absolute(opt.out);
	guest_plan plan = check_group(g);
	return {std::move(g), std::move(plan)};
}

std::vector<planned_group> matrix_groups(const vm_options &opt)
{
	const auto def = load_matrix(opt.matrix);
	std::vector<planned_group> groups;
	for (const auto &mg : def.groups) {
		group_spec g = file_group(opt, mg);
		try {
			guest_plan plan = check_group(g);
			groups.push_back({std::move(g), std::move(plan)});
		} catch (const usage_error &e) {
			throw usage_error(opt.matrix.string() + ": kernel " + mg.kernel.name + ", placement " +
					  mg.boot + ": " + e.what());
		}
	}
	return groups;
}

} // namespace pinmatrix
