// SPDX-License-Identifier: GPL-2.0
#include "group_spec.hpp"

namespace pinmatrix {

unsigned guest_memory_mib(const group_spec &g)
{
	return g.guest.memory_mib ? g.guest.memory_mib : g.boot->memory_mib;
}

bool runs_no_plan(const group_spec &g)
{
	return !g.guest.guest_cmd.empty() || g.guest.ssh_port;
}

guest_plan make_guest_plan(const group_spec &g)
{
	suite_options o;
	o.restricted = g.boot->restricted;
	o.pins = g.guest.pins;
	// The records of cases the guest never ran are written here, on the
	// host, whose kernel is not the guest's.
	o.judged_kernel = {false, std::nullopt};
	guest_plan plan;
	plan.suites = make_suites(o);
	plan.entries = select_plan(plan.suites, g.guest.cases);
	// A command or a managed node runs no plan: nothing to prepare for it.
	if (!runs_no_plan(g))
		plan.needs = guest_needs_of(plan.entries);
	return plan;
}

} // namespace pinmatrix
