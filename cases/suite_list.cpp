// SPDX-License-Identifier: GPL-2.0
// Every suite, in plan order: a new suite is one line here.
#include "suite.hpp"

#include "backing_suite.hpp"
#include "fork_suite.hpp"
#include "pin_suite.hpp"
#include "pinner_suite.hpp"
#include "race_suite.hpp"
#include "registration_suite.hpp"
#include "ualink/ualink_suite.hpp"

namespace pinmatrix {

std::vector<std::unique_ptr<suite>> make_suites(const suite_options &opt)
{
	std::vector<std::unique_ptr<suite>> all;
	all.push_back(make_pin_suite(opt));
	all.push_back(make_ualink_suite(opt));
	all.push_back(make_registration_suite(opt));
	all.push_back(make_fork_suite(opt));
	all.push_back(make_race_suite(opt));
	all.push_back(make_backing_suite(opt));
	all.push_back(make_pinner_suite(opt));
	return all;
}

} // namespace pinmatrix
