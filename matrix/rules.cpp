// SPDX-License-Identifier: GPL-2.0
#include "rules.hpp"

#include <cerrno>

namespace pinmatrix {

expectation expect(placement p, first_pin f)
{
	const bool needs_migration = !traits(p).longterm_pinnable;
	const auto &pin = traits(f);

	expectation e;
	e.first_pin_migrates = needs_migration && pin.declares_longterm;
	const bool still_misplaced = needs_migration && !e.first_pin_migrates;
	const bool blocked = still_misplaced && pin.holds_reference;
	// migrate_pages() fails on the extra reference; long-term GUP says -ENOMEM.
	e.registration_errno = blocked ? ENOMEM : 0;
	e.registration_migrates = still_misplaced && !blocked;
	return e;
}

std::string expectation::summary() const
{
	if (!registration_succeeds())
		return "ENOMEM";
	if (registration_migrates)
		return "migrate, ok";
	if (first_pin_migrates)
		return "ok, no move";
	return "ok";
}

} // namespace pinmatrix
