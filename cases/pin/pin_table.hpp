// SPDX-License-Identifier: GPL-2.0
#pragma once

// The pin causal matrix as one literal table (pin_table.cpp): one row per
// case, for each --first-pin source, in the order the cases run. A row says
// where the page is, which first pin is held on it, the outcome expected of
// the long-term second pin, and why: the answers to the rule's three
// questions (matrix/rules.hpp). The plan (plan.hpp) is this table with the
// boot's restricted placement filled in; rules.cpp is its checker
// (tests/unit/pin_table_test.cpp: every row agrees with expect() on every
// placement it stands for, and every source's plan has each of its first
// pins once per placement).

#include <string_view>
#include <vector>

#include "first_pin.hpp"

namespace pinmatrix {

// Where the case's page is: the boot's restricted memory (MIGRATE_CMA, or
// ZONE_MOVABLE standing in for it on a kernel without CMA; the boot chooses
// which), or ordinary memory.
enum class page_at { restricted, ordinary };

// Question 2: does the first pin declare FOLL_LONGTERM, so that its own pin
// moves the page out first? `observed`: a GPU driver's, seen at its pin.
enum class longterm_answer { no, yes, observed };

// The second pin's outcome; `by_contract`: ENOMEM if the observed first pin
// is short-term (R535-style), else ok with no move (R555-style).
enum class pin_outcome { migrate_ok, enomem, ok_no_move, ok, by_contract };

struct pin_row {
	const char *source;		// the --first-pin source whose plan it is in
	const char *id;			// "A".."D" (section 16.5), or "" (its name)
	page_at where;
	first_pin first;
	// Why: the rule's three questions.
	bool must_migrate;		// 1. a long-term pin may not leave the page where it is
	longterm_answer first_longterm;	// 2. the first pin moves it first itself
	bool first_holds_reference;	// 3. the first pin holds a reference that blocks migration
	pin_outcome expected;
	const char *kernels;		// the kernels the row's expectation holds on
};

const std::vector<pin_row> &pin_table();

// As expectation::summary() words it: "migrate, ok", "ENOMEM", ...
std::string_view summary(pin_outcome o);
std::string_view name(page_at w);
std::string_view name(longterm_answer a);

} // namespace pinmatrix
