// SPDX-License-Identifier: GPL-2.0
#pragma once

// The one place expected outcomes come from. Three questions decide a case
// (section 16.5 of the incident write-up):
//   1. does the placement need migration before a long-term pin?
//   2. does the first pin itself migrate (it declares FOLL_LONGTERM)?
//   3. does the first pin block migration (it holds a reference)?
// Question 2 comes from the first pin's row (lib/first_pin.cpp): declared
// for the module's contracts and io_uring; for a GPU driver loaded at run
// time (contract_observed) it is what the case saw the driver do at its pin
// (moved the page out of restricted memory: long-term aware, R555-style;
// left it there: not, R535-style), and the rest follows from the same rules.

#include <optional>
#include <string>

#include "first_pin.hpp"
#include "placement.hpp"

namespace pinmatrix {

struct expectation {
	bool first_pin_migrates = false;
	bool registration_migrates = false;
	int registration_errno = 0;	// 0 or ENOMEM
	// How question 2 was answered: "declared", "observed" or, before the
	// case ran, "pending" (the fields then assume a short-term pin).
	std::string contract_source = "declared";
	bool longterm = false;		// the answer
	std::string contract;		// for people: "observed: long-term aware (R555-style) ..."

	bool registration_succeeds() const { return registration_errno == 0; }
	// The harm: restricted memory can be taken back (CMA allocated, a
	// ZONE_MOVABLE block offlined) with every pin held exactly when no pin
	// strands the page in it, which is when the registration succeeds.
	// Checked by the give-back oracle (lib/give_back.hpp) in every case.
	bool memory_given_back_while_held() const { return registration_succeeds(); }
	// Short form for the table: "migrate, ok", "ENOMEM", "ok, no move", "ok".
	std::string summary() const;
};

// observed_longterm: what the case saw a contract_observed pin do (nullopt:
// not yet, or no evidence because the page was already long-term pinnable).
expectation expect(placement p, first_pin f, std::optional<bool> observed_longterm = std::nullopt);

} // namespace pinmatrix
