// SPDX-License-Identifier: GPL-2.0
#pragma once

// The one place expected outcomes come from. Three questions decide a case
// (section 16.5 of the incident write-up):
//   1. does the placement need migration before a long-term pin?
//   2. does the first pin itself migrate (it declares FOLL_LONGTERM)?
//   3. does the first pin block migration (it holds a reference)?

#include <string>

#include "first_pin.hpp"
#include "placement.hpp"

namespace pinmatrix {

struct expectation {
	bool first_pin_migrates = false;
	bool registration_migrates = false;
	int registration_errno = 0;	// 0 or ENOMEM

	bool registration_succeeds() const { return registration_errno == 0; }
	// Short form for the table: "migrate, ok", "ENOMEM", "ok, no move", "ok".
	std::string summary() const;
};

expectation expect(placement p, first_pin f);

} // namespace pinmatrix
