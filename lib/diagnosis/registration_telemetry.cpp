// SPDX-License-Identifier: GPL-2.0
#include "registration_telemetry.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "byte_size.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

using nlohmann::json;

const char *name(enomem_class c)
{
	switch (c) {
	case enomem_class::memlock_quota: return "memlock quota";
	case enomem_class::placement_blocked_by_pin: return "long-term placement blocked by an existing pin";
	case enomem_class::capacity: return "capacity";
	case enomem_class::unknown: break;
	}
	return "unknown";
}

namespace {

std::string pages_text(uint64_t n)
{
	return std::to_string(n) + (n == 1 ? " page" : " pages");
}

// ib_umem_get(): new_pinned = pinned_vm + npages; new_pinned > limit >> PAGE_SHIFT.
bool memlock_exceeded(const registration_facts &f, uint64_t &limit_pages, uint64_t &new_pinned)
{
	if (!f.memlock_known || f.cap_ipc_lock || !f.memlock_limit)
		return false;
	const uint64_t ps = f.page_size ? f.page_size : 4096;
	limit_pages = *f.memlock_limit / ps;
	new_pinned = f.vm_pin_bytes / ps + (f.length + ps - 1) / ps;
	return new_pinned > limit_pages;
}

// Pages that must migrate before a long-term pin: what the probes saw, or
// what the kernel did (it migrates for MR_LONGTERM_PIN only such pages).
size_t needing_migration(const registration_facts &f)
{
	if (f.pages_not_longterm_pinnable)
		return f.pages_not_longterm_pinnable;
	if (f.traced && f.migration_attempted)
		return size_t(std::max<int64_t>(1, f.migrate_failed + f.migrate_succeeded));
	return 0;
}

std::string needing_migration_fact(const registration_facts &f)
{
	const size_t n = needing_migration(f);
	const std::string it = n == 1 ? "it" : "them";
	if (f.pages_not_longterm_pinnable)
		return std::to_string(n) + " of " + pages_text(f.pages) + " not long-term pinnable (" +
		       f.not_pinnable_where + "): FOLL_LONGTERM must migrate " + it;
	return "trace: the kernel migrated " + pages_text(n) + " for the long-term pin (MR_LONGTERM_PIN): " +
	       (n == 1 ? "it was" : "they were") + " not long-term pinnable";
}

void trace_facts(const registration_facts &f, std::vector<std::string> &why)
{
	if (!f.traced)
		return;
	if (f.migration_attempted)
		why.push_back("trace: migrate_pages(MR_LONGTERM_PIN) moved " + std::to_string(f.migrate_succeeded) +
			      ", failed " + std::to_string(f.migrate_failed));
	if (f.gup_errno)
		why.push_back("trace: the long-term GUP returned -" + std::to_string(*f.gup_errno));
}

const std::vector<classification_rule> rules = {
	{"memlock-quota", enomem_class::memlock_quota,
	 "pinned_vm + the new pages exceed RLIMIT_MEMLOCK and the process lacks CAP_IPC_LOCK: ib_umem_get "
	 "refuses before pinning anything",
	 [](const registration_facts &f, std::vector<std::string> &why) {
		 uint64_t limit_pages = 0, new_pinned = 0;
		 if (!f.memlock_known) {
			 if (f.traced && f.gup_reached == false && f.umem_errno == ENOMEM) {
				 why.push_back("memlock state not read (the process was gone)");
				 why.push_back("trace: ib_umem_get returned -ENOMEM before calling the long-term GUP: "
					       "besides two small kernel allocations, only its memlock check fails there");
				 return true;
			 }
			 why.push_back("memlock state unknown");
			 return false;
		 }
		 if (f.cap_ipc_lock) {
			 why.push_back("the process has CAP_IPC_LOCK: no memlock limit applies");
			 return false;
		 }
		 if (!memlock_exceeded(f, limit_pages, new_pinned)) {
			 why.push_back("memlock: VmPin " + byte_size_text(f.vm_pin_bytes) + " + " + byte_size_text(f.length) +
				       " within RLIMIT_MEMLOCK " +
				       (f.memlock_limit ? byte_size_text(*f.memlock_limit) : std::string("unlimited")));
			 return false;
		 }
		 if (f.gup_reached == true) {
			 why.push_back("over the memlock limit, but the trace shows ib_umem_get past its memlock "
				       "check (it called the long-term GUP)");
			 return false;
		 }
		 why.push_back("VmPin " + byte_size_text(f.vm_pin_bytes) + " + " + byte_size_text(f.length) + " requested = " +
			       pages_text(new_pinned) + " > RLIMIT_MEMLOCK " + byte_size_text(*f.memlock_limit) + " (" +
			       pages_text(limit_pages) + ")");
		 why.push_back("no CAP_IPC_LOCK");
		 if (f.gup_reached == false)
			 why.push_back("trace: ib_umem_get returned -ENOMEM without calling the long-term GUP");
		 return true;
	 }},
	{"placement-blocked-by-visible-pin", enomem_class::placement_blocked_by_pin,
	 "a page a long-term pin may not stay on (ZONE_MOVABLE, MIGRATE_CMA) must migrate first, and a pin "
	 "already on it blocks the migration",
	 [](const registration_facts &f, std::vector<std::string> &why) {
		 if (!f.foll_longterm) {
			 why.push_back("the API does not ask for FOLL_LONGTERM");
			 return false;
		 }
		 if (f.gup_reached == false) {
			 why.push_back("trace: ib_umem_get never called the long-term GUP");
			 return false;
		 }
		 if (!needing_migration(f)) {
			 why.push_back(f.pages_placement_known ? "every page is long-term pinnable: no migration needed"
							       : "page placement unknown");
			 return false;
		 }
		 if (!f.pages_module_pinned && !f.pages_maybe_dma_pinned) {
			 why.push_back(f.pins_visible ? "no pin seen on the pages" : "pins not visible here");
			 return false;
		 }
		 if (f.traced && f.migration_attempted && f.migrate_failed == 0) {
			 why.push_back("trace: the migration succeeded");
			 return false;
		 }
		 why.push_back(needing_migration_fact(f));
		 for (const auto &p : f.module_pins)
			 why.push_back("the test module holds " + p + " on " + (needing_migration(f) == 1 ? "it" : "them"));
		 if (f.pages_maybe_dma_pinned)
			 why.push_back(pages_text(f.pages_maybe_dma_pinned) + " maybe_dma_pinned (a FOLL_PIN is held)");
		 trace_facts(f, why);
		 return true;
	 }},
	{"capacity", enomem_class::capacity,
	 "the kernel had no memory to give: MemAvailable is below what the registration needs",
	 [](const registration_facts &f, std::vector<std::string> &why) {
		 uint64_t limit_pages = 0, new_pinned = 0;
		 if (f.traced && f.gup_reached == false && f.umem_errno == ENOMEM && f.memlock_known &&
		     !memlock_exceeded(f, limit_pages, new_pinned)) {
			 why.push_back("trace: ib_umem_get returned -ENOMEM before calling the long-term GUP, within "
				       "the memlock limit: one of its kernel allocations failed");
			 return true;
		 }
		 if (!f.mem_available) {
			 why.push_back("available memory unknown");
			 return false;
		 }
		 const uint64_t need = f.length + f.min_free.value_or(0);
		 if (*f.mem_available >= need) {
			 why.push_back("MemAvailable " + byte_size_text(*f.mem_available) + ": not short of memory");
			 return false;
		 }
		 why.push_back("MemAvailable " + byte_size_text(*f.mem_available) + " < " + byte_size_text(f.length) +
			       " registered + min_free_kbytes " + byte_size_text(f.min_free.value_or(0)));
		 return true;
	 }},
	{"placement-blocked-by-unseen-pin", enomem_class::placement_blocked_by_pin,
	 "pages that must migrate for a long-term pin could not be moved and memory is not short: something "
	 "this tool cannot see holds them (another process's or a driver's pin)",
	 [](const registration_facts &f, std::vector<std::string> &why) {
		 if (!f.foll_longterm || !needing_migration(f)) {
			 why.push_back(f.pages_placement_known || f.traced ? "no page needed migration" : "page placement unknown");
			 return false;
		 }
		 if (f.gup_reached == false) {
			 why.push_back("trace: ib_umem_get never called the long-term GUP");
			 return false;
		 }
		 const bool trace_says_failed = f.traced && f.migration_attempted && f.migrate_failed > 0;
		 if (!trace_says_failed && f.pins_visible) {
			 why.push_back("no failed migration traced and no pin seen");
			 return false;
		 }
		 if (f.traced && f.migration_attempted && f.migrate_failed == 0) {
			 why.push_back("trace: the migration succeeded");
			 return false;
		 }
		 if (f.memlock_known) {
			 uint64_t limit_pages = 0, new_pinned = 0;
			 if (memlock_exceeded(f, limit_pages, new_pinned)) {
				 why.push_back("over the memlock limit");
				 return false;
			 }
		 }
		 why.push_back(needing_migration_fact(f));
		 if (trace_says_failed)
			 trace_facts(f, why);
		 else
			 why.push_back("inferred: the pins of other processes and drivers are not visible here; a "
				       "short-term pin (FOLL_PIN without FOLL_LONGTERM) on them makes the migration fail");
		 return true;
	 }},
};

} // namespace

const std::vector<classification_rule> &classification_rules() { return rules; }

classification classify_failure(const registration_facts &f)
{
	classification c;
	if (f.err != ENOMEM) {
		c.label = "not ENOMEM";
		if (f.err == EPERM && f.memlock_known && !f.cap_ipc_lock && f.memlock_limit && *f.memlock_limit == 0) {
			c.rule = "eperm-memlock-zero";
			c.facts.push_back("RLIMIT_MEMLOCK is 0 and no CAP_IPC_LOCK: ib_umem_get refuses with EPERM "
					  "(can_do_mlock), not ENOMEM");
		} else {
			c.rule = "other-errno";
			c.facts.push_back(errno_name(f.err) + ": this classification is about ENOMEM");
		}
		return c;
	}
	for (const auto &r : rules) {
		std::vector<std::string> why;
		if (r.applies(f, why)) {
			c.cls = r.cls;
			c.label = name(r.cls);
			c.rule = r.id;
			c.facts = std::move(why);
			return c;
		}
		std::string line = std::string(r.id) + ": ";
		for (size_t i = 0; i < why.size(); i++)
			line += (i ? "; " : "") + why[i];
		c.ruled_out.push_back(line);
	}
	c.cls = enomem_class::unknown;
	c.label = name(enomem_class::unknown);
	c.rule = "none-applies";
	c.facts.push_back("no rule fits: not the memlock limit, no page needing migration with a pin on it, "
			  "memory not short (each rule is ruled out with its reason)");
	trace_facts(f, c.facts);
	return c;
}

json to_json(const classification &c)
{
	json j = {{"class", c.label}, {"rule", c.rule}, {"facts", c.facts}};
	if (!c.ruled_out.empty())
		j["ruled_out"] = c.ruled_out;
	return j;
}

std::string failure_stage(const registration_facts &f, const trace_path *t)
{
	if (!f.err)
		return "";
	if (t && t->from_trace) {
		if (t->umem_called == false)
			return "before ib_umem_get (user space, or uverbs before the umem)";
		if (t->gup_reached == false)
			return "ib_umem_get, before pinning: its memlock check (or a page-sized allocation)";
		if (t->migration_attempted && t->migrate_failed > 0)
			return "ib_umem_get -> long-term GUP -> migration (MR_LONGTERM_PIN) failed";
		if (t->gup_errno)
			return "ib_umem_get -> long-term GUP (pin_user_pages_fast) returned -" +
			       std::to_string(*t->gup_errno);
		if (t->umem_errno)
			return "ib_umem_get, after pinning (scatterlist or DMA mapping)";
		if (t->provider_errno)
			return "the driver's MR creation, after ib_umem_get succeeded";
		return "not on the traced kernel path (user space or uverbs)";
	}
	uint64_t limit_pages = 0, new_pinned = 0;
	if (memlock_exceeded(f, limit_pages, new_pinned))
		return "ib_umem_get memlock check (inferred from the limit; not traced)";
	return "not traced";
}

} // namespace pinmatrix
