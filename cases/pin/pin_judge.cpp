// SPDX-License-Identifier: GPL-2.0
#include "pin_judge.hpp"

#include <cstdio>
#include <cstring>

#include "sys_error.hpp"
#include "text.hpp"

namespace pinmatrix {

bool observation::migrated_by_first_pin() const
{
	return after_first_pin && after_first_pin->pfn != before.pfn;
}

bool observation::migrated_by_registration() const
{
	const uint64_t from = after_first_pin ? after_first_pin->pfn : before.pfn;
	return after_registration && after_registration->pfn != from;
}

uint64_t observation::pfn_after() const
{
	if (after_registration)
		return after_registration->pfn;
	if (after_first_pin)
		return after_first_pin->pfn;
	return before.pfn;
}

std::string observation::summary() const
{
	if (first_pin_errno)
		return "first pin " + errno_name(first_pin_errno);
	std::string s;
	if (migrated_by_first_pin())
		s = "moved at first pin, ";
	if (migrated_by_registration())
		s += "moved " + hex(after_first_pin ? after_first_pin->pfn : before.pfn) + "->" +
		     hex(after_registration->pfn) + ", ";
	if (registration_errno) {
		s += errno_name(registration_errno);
		if (content_intact)
			s += *content_intact ? ", page intact" : ", page CHANGED";
		return s;
	}
	return s + "ok";
}

namespace {

// The expectation for what this case saw. A driver loaded at run time: its
// contract is what its pin did to a page that needed migration (rules.hpp).
// A page that was already long-term pinnable gives no evidence, and both
// contracts expect the same. The driver's version disagreeing with what its
// pin did goes into why.
expectation expectation_seen(const case_def &def, const observation &obs, std::vector<std::string> &why)
{
	const auto &pin = traits(def.first);
	placement where = def.where;
	if (pin.allocates)
		where = parse_placement(obs.before.placement).value_or(def.where);
	std::optional<bool> observed_longterm;
	bool undetermined = false;
	if (pin.contract_observed && !obs.first_pin_errno) {
		// Unknown either way decides nothing.
		undetermined = obs.before.longterm_pinnable != false;
		observed_longterm = !undetermined && obs.migrated_by_first_pin() && obs.after_first_pin &&
				    obs.after_first_pin->longterm_pinnable == true;
	}
	expectation e = expect(where, def.first, observed_longterm);
	if (undetermined)
		e.contract = obs.before.longterm_pinnable
				     ? "observed: undetermined (the page was already long-term pinnable; "
				       "both contracts expect the same)"
				     : "observed: undetermined (whether the page was long-term pinnable is "
				       "unknown)";
	if (observed_longterm && !undetermined && obs.longterm_by_version &&
	    *obs.longterm_by_version != *observed_longterm)
		why.push_back(std::string("the driver's version predicts ") +
			      (*obs.longterm_by_version ? "a FOLL_LONGTERM host pin" : "a short-term host pin") +
			      " but its pin " + (*observed_longterm ? "moved" : "did not move") + " the page");
	return e;
}

// Where the page went and what the registration returned, against e.
void judge_placements(const expectation &e, const observation &obs, std::vector<std::string> &why)
{
	if (obs.migrated_by_first_pin() != e.first_pin_migrates)
		why.push_back(e.first_pin_migrates ? "first pin did not move the page" : "first pin moved the page");
	if (obs.registration_errno != e.registration_errno)
		why.push_back("registration " + errno_name(obs.registration_errno) + ", expected " +
			      errno_name(e.registration_errno));
	else if (obs.migrated_by_registration() != e.registration_migrates)
		why.push_back(e.registration_migrates ? "registration did not move the page"
						      : "registration moved the page");
	// MIGRATE_CMA read from the pageblock must agree with the CMA areas.
	if (obs.before.placement == "cma" && obs.before.cma_area.empty())
		why.push_back("pageblock says MIGRATE_CMA but no CMA area (debugfs or boot log) holds PFN " +
			      hex(obs.before.pfn));
}

// How the second pin's readback is named in a reason.
std::string readback_label(const std::string &method)
{
	if (method == "io_uring-read-fixed")
		return "READ_FIXED readback: ";
	if (method == "vfio-edu-dma")
		return "edu DMA readback: ";
	return "RDMA WRITE readback: ";
}

// A registration that succeeded: its page out of restricted memory, and
// device and CPU agreeing on its content.
void judge_registered(const observation &obs, std::vector<std::string> &why)
{
	// Unknown is no evidence that the page left: not a pass.
	if (obs.after_registration && obs.after_registration->longterm_pinnable == false)
		why.push_back("registered page left in " + obs.after_registration->placement + " memory");
	else if (obs.after_registration && !obs.after_registration->longterm_pinnable)
		why.push_back("registered page: long-term pinnable unknown (its pageblock's migratetype "
			      "cannot be read on this kernel)");
	if (obs.rdma_write_readback != true)
		why.push_back(readback_label(obs.readback_method) +
			      (obs.rdma_detail.empty() ? std::string("not done") : obs.rdma_detail));
}

// A registration that failed: the page intact, and the same registration
// succeeding once the first pin is released.
void judge_refused(const first_pin_traits &pin, const observation &obs, std::vector<std::string> &why)
{
	if (obs.content_intact != true)
		why.push_back("page content changed by the failed registration");
	// The driver frees what it allocated with its pin: nothing to retry.
	if (pin.allocates)
		return;
	if (!obs.recovery)
		why.push_back("no recovery attempt");
	else if (obs.recovery->errno_value)
		why.push_back("registration after releasing the first pin: " + errno_name(obs.recovery->errno_value));
}

// The harm: restricted memory goes back with every pin held unless a pin
// strands the page in it, and once the first pin is gone in any case.
void judge_give_back(const expectation &e, const observation &obs, std::vector<std::string> &why)
{
	if (const auto &g = obs.give_back_held; g && g->given_back &&
	    *g->given_back != e.memory_given_back_while_held())
		why.push_back(std::string(*g->given_back ? "memory given back" : "memory not given back") +
			      " with the pins held, expected " + (e.memory_given_back_while_held() ? "given" : "refused") +
			      " (" + g->method + ": " + g->detail + ")");
	if (const auto &g = obs.give_back_released; g && g->given_back == false)
		why.push_back("memory not given back after the first pin was released (" + g->method + ": " +
			      g->detail + ")");
}

// Why the give-back's answers decide nothing, or "": an attempt the oracle
// answered with neither yes nor no, or a refusal that nothing later in the
// case shows this memory could end: neither the give-back after the first
// pin was released nor the control (every pin of the case released) got it
// back, so other memory may have kept the block (a machine under memory
// pressure, a pin another case leaked). Memory that went back needs no
// control. A machine with no oracle at all (method "none") owns no such
// check: that is a note (give_back_note), not this.
std::string give_back_undecided(const observation &obs)
{
	const auto asked = [](const std::optional<give_back_attempt> &g) { return g && g->method != "none"; };
	const auto is = [&](const std::optional<give_back_attempt> &g, bool v) { return asked(g) && g->given_back == v; };
	const auto said = [](const char *when, const give_back_attempt &g) {
		return std::string(when) + " (" + g.method + ": " + g.detail + ")";
	};
	const auto &held = obs.give_back_held, &released = obs.give_back_released, &c = obs.give_back_control;
	if (asked(held) && !held->given_back)
		return said("the oracle answered neither yes nor no with the pins held", *held);
	if (asked(released) && !released->given_back)
		return said("the oracle answered neither yes nor no after the first pin was released", *released);
	const bool refused = is(held, false) || is(released, false);
	if (!refused || is(released, true) || is(c, true))
		return "";
	if (!asked(c))
		return "no control: the memory was not asked back with every pin of the case released";
	return said(c->given_back == false ? "with every pin of the case released the memory did not go back either"
				  : "the control (every pin of the case released) got neither yes nor no",
		    *c);
}

// Where this machine has no give-back oracle, the record says so.
std::string give_back_note(const observation &obs)
{
	const auto &g = obs.give_back_held;
	return g && g->method == "none" ? "the give-back is not checked here: " + g->detail : "";
}

// A pin the case took and released must be gone: with every pin of the
// case released, its page no longer reads maybe_dma_pinned (a FOLL_PIN
// leaked by the kernel, or by the pinner, is a failure of the case whose
// pin it was, whatever the give-back could decide). The pagemap probe
// cannot tell.
void judge_released(const observation &obs, std::vector<std::string> &why)
{
	if (obs.probe != "module" || !obs.after_release || !obs.after_release->maybe_dma_pinned)
		return;
	why.push_back("a pin outlived its release: with every pin of the case released, its page " +
		      hex(obs.after_release->pfn) + " still reads maybe_dma_pinned (refcount " +
		      std::to_string(obs.after_release->refcount) + ")");
}

} // namespace

case_result judge(const case_def &def, const observation &obs)
{
	case_result r;
	r.def = def;
	r.observed = obs;
	std::vector<std::string> why;
	r.expected = expectation_seen(def, obs, why);
	if (obs.first_pin_errno) {
		r.outcome = verdict::fail;
		r.reason = "first pin failed: " + errno_name(obs.first_pin_errno) +
			   (obs.first_pin_detail.empty() ? "" : " (" + obs.first_pin_detail + ")");
		return r;
	}
	judge_placements(r.expected, obs, why);
	if (!obs.registration_errno)
		judge_registered(obs, why);
	else
		judge_refused(traits(def.first), obs, why);
	judge_released(obs, why);
	const std::string undecided = give_back_undecided(obs);
	if (undecided.empty())
		judge_give_back(r.expected, obs, why);
	r.outcome = why.empty() ? verdict::pass : verdict::fail;
	r.reason = join(why, "; ");
	if (!undecided.empty() && r.outcome == verdict::pass) {
		// PASS only when every check the case owns decided: this machine
		// could not give the harm's answer (a SKIP, with why).
		r.outcome = verdict::skip;
		r.reason = "every other check held, but the give-back decided nothing: " + undecided;
	} else if (!undecided.empty()) {
		r.reason += "; the give-back decided nothing: " + undecided;
	} else if (const auto note = give_back_note(obs); !note.empty() && r.outcome == verdict::pass) {
		r.reason = note;
	}
	return r;
}

case_result not_run(const case_def &def, verdict v, std::string reason)
{
	case_result r;
	r.def = def;
	r.expected = expect(def.where, def.first);
	r.outcome = v;
	r.reason = std::move(reason);
	return r;
}

} // namespace pinmatrix
