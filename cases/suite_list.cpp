// SPDX-License-Identifier: GPL-2.0
// Every suite, in plan order: a new suite is one line here.
#include "suite.hpp"

#include "backing/backing_cases.hpp"
#include "fork/fork_cases.hpp"
#include "pin/pin_suite.hpp"
#include "pinner/pinner_cases.hpp"
#include "race/race_cases.hpp"
#include "registration/registration_cases.hpp"
#include "ualink/ualink_cases.hpp"

namespace pinmatrix {

std::vector<std::unique_ptr<suite>> make_suites(const suite_options &opt)
{
	std::vector<std::unique_ptr<suite>> all;
	all.push_back(make_pin_suite(opt));
	all.push_back(make_table_suite(ualink::definition, opt));
	all.push_back(make_table_suite(memlock::definition, opt));
	all.push_back(make_table_suite(fork_cases::definition, opt));
	all.push_back(make_table_suite(race_cases::definition, opt));
	all.push_back(make_table_suite(backing_cases::definition, opt));
	all.push_back(make_table_suite(pinner_cases::definition, opt));
	return all;
}

} // namespace pinmatrix
