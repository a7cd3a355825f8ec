// SPDX-License-Identifier: GPL-2.0
#pragma once

// The UALink case bodies, by concern; the table (ualink_table.cpp) names
// one for each row. A body only observes: every comparison goes through its
// case_context with a key of its row.

#include "ualink_cases.hpp"

namespace pinmatrix::ualink {

// ualink_export_cases.cpp: the uapi, export and the ioctl's refusals
void abi_layout(case_context &c);
void export_idempotent(case_context &c);
void export_distinct(case_context &c);
void export_accel_id(case_context &c);
void export_unpredictable(case_context &c);
void export_bad_gem_handle(case_context &c);
void export_non_vram(case_context &c);
void unknown_op(case_context &c);
void nonzero_flags(case_context &c);
void inactive_state_first(case_context &c);
void union_aliasing(case_context &c);
void refused_calls_change_nothing(case_context &c);
void input_bits_each_checked(case_context &c);

// ualink_import_cases.cpp: import, who may import and from where
void import_dmabuf_data(case_context &c);
void double_import_same_object(case_context &c);
void import_on_exporter(case_context &c);
void import_forged(case_context &c);
void primary_node_auth(case_context &c);
void import_accel_id_range(case_context &c);
void import_unknown_peer(case_context &c);
void import_mmap_refused(case_context &c);
void unprivileged_client(case_context &c);

// ualink_lifetime_cases.cpp: revoke, pins, resets, NPAs, concurrency
void last_close_revokes(case_context &c);
void exporter_pinned(case_context &c);
void node_reset_cleans_peers(case_context &c);
void no_npa_in_output(case_context &c);
void stress_no_leak(case_context &c);
void handle_outlives_its_exporter_file(case_context &c);
void importer_reset_spares_others(case_context &c);
void import_goes_with_its_last_user(case_context &c);
void dynamic_attach_revoked(case_context &c);

} // namespace pinmatrix::ualink
