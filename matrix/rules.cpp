// SPDX-License-Identifier: GPL-2.0
#include "rules.hpp"

#include <cerrno>

namespace pinmatrix {

expectation expect(placement p, first_pin f, std::optional<bool> observed_longterm)
{
	const bool needs_migration = !traits(p).longterm_pinnable;
	const auto &pin = traits(f);

	expectation e;
	e.longterm = pin.declares_longterm;
	if (pin.contract_observed) {
		e.contract_source = observed_longterm ? "observed" : "pending";
		e.longterm = observed_longterm.value_or(false);
		e.contract = !observed_longterm ? "not known up front: observed at the driver's pin"
			     : *observed_longterm
				     ? "observed: long-term aware (moved the page out at its pin, R555-style)"
				     : "observed: not long-term aware (left the page in place, R535-style)";
	} else {
		e.contract = std::string("declared: ") +
			     (!pin.holds_reference ? "no pin"
			      : pin.declares_longterm ? "FOLL_LONGTERM" : "short-term (no FOLL_LONGTERM)");
	}
	e.first_pin_migrates = needs_migration && e.longterm;
	const bool still_misplaced = needs_migration && !e.first_pin_migrates;
	const bool blocked = still_misplaced && pin.holds_reference;
	// migrate_pages() fails on the extra reference; long-term GUP says -ENOMEM.
	e.registration_errno = blocked ? ENOMEM : 0;
	e.registration_migrates = still_misplaced && !blocked;
	return e;
}

std::string expectation::summary() const
{
	if (contract_source == "pending" && first_pin_migrates == false && registration_errno)
		return "ENOMEM (R535-style) | ok, no move (R555-style)";
	if (!registration_succeeds())
		return "ENOMEM";
	if (registration_migrates)
		return "migrate, ok";
	if (first_pin_migrates)
		return "ok, no move";
	return "ok";
}

} // namespace pinmatrix
