// SPDX-License-Identifier: GPL-2.0
/*
 * ualink_sim: the model's knobs. Each accelerator's sysfs <dev>/ualink,
 * named and shaped as amdgpu's (accel_state and reset take a node offline),
 * and debugfs ualink_sim/: faults, the UALINK_SIM_FAULT_* bits that turn on
 * known deviations, and npa, the NPAs that only the kernel sees.
 */

#include <linux/debugfs.h>
#include <linux/device.h>
#include <linux/kobject.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/wait.h>

#include <drm/drm_ioctl.h>

#include "ualink_sim.h"
#include "usim_drv.h"

/* sysfs: <dev>/ualink, named and shaped as amdgpu's */

static const char * const usim_state_names[USIM_STATE_MAX] = {
	[USIM_STATE_UNCONFIGURED]	= "unconfigured",
	[USIM_STATE_PPOD_CONFIGURED]	= "ppod_configured",
	[USIM_STATE_VPOD_CONFIGURED]	= "vpod_configured",
	[USIM_STATE_READY]		= "ready",
	[USIM_STATE_ACTIVE]		= "active",
	[USIM_STATE_ERROR]		= "error",
};

static struct usim_accel *kobj_to_accel(struct kobject *kobj)
{
	return dev_get_drvdata(kobj_to_dev(kobj->parent));
}

static ssize_t accel_id_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", kobj_to_accel(kobj)->id);
}

static ssize_t accel_state_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", usim_state_names[READ_ONCE(kobj_to_accel(kobj)->state)]);
}

/* Read-only in amdgpu; here the knob that takes a node offline. */
static ssize_t accel_state_store(struct kobject *kobj, struct kobj_attribute *attr,
				 const char *buf, size_t count)
{
	struct usim_accel *accel = kobj_to_accel(kobj);
	int state;

	state = sysfs_match_string(usim_state_names, buf);
	if (state < 0)
		return state;
	mutex_lock(&usim_pod.lock);
	if (accel->state == USIM_STATE_ACTIVE && state != USIM_STATE_ACTIVE) {
		usim_pod.resets++;
		usim_node_lost(accel, false);
	}
	WRITE_ONCE(accel->state, state);
	mutex_unlock(&usim_pod.lock);
	return count;
}

/* Each simulated accelerator is a node of its own. */
static ssize_t local_accels_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", kobj_to_accel(kobj)->id);
}

static ssize_t vpod_active_accels_show(struct kobject *kobj, struct kobj_attribute *attr,
				       char *buf)
{
	unsigned int i, n = READ_ONCE(usim_pod.n);
	ssize_t len = 0;

	for (i = 0; i < n; i++)
		len += sysfs_emit_at(buf, len, i ? " %u" : "%u", i);
	return len + sysfs_emit_at(buf, len, "\n");
}

static ssize_t reset_store(struct kobject *kobj, struct kobj_attribute *attr, const char *buf,
			   size_t count)
{
	struct usim_accel *accel = kobj_to_accel(kobj);
	bool reset;
	int ret;

	ret = kstrtobool(buf, &reset);
	if (ret)
		return ret;
	if (reset) {
		mutex_lock(&usim_pod.lock);
		usim_pod.resets++;
		usim_node_lost(accel, false);
		mutex_unlock(&usim_pod.lock);
	}
	return count;
}

static struct kobj_attribute usim_attr_accel_id = __ATTR_RO(accel_id);
static struct kobj_attribute usim_attr_accel_state = __ATTR_RW(accel_state);
static struct kobj_attribute usim_attr_local_accels = __ATTR_RO(local_accels);
static struct kobj_attribute usim_attr_vpod_active_accels = __ATTR_RO(vpod_active_accels);
static struct kobj_attribute usim_attr_reset = __ATTR_WO(reset);

static struct attribute *usim_attrs[] = {
	&usim_attr_accel_id.attr,
	&usim_attr_accel_state.attr,
	&usim_attr_local_accels.attr,
	&usim_attr_vpod_active_accels.attr,
	&usim_attr_reset.attr,
	NULL
};

const struct attribute_group usim_attr_group = {
	.attrs = usim_attrs,
};

/* debugfs: NPAs as only the kernel drivers see them */

static int usim_npa_show(struct seq_file *m, void *unused)
{
	struct usim_import *imp;
	unsigned int i;

	/*
	 * Only what the import record holds: a show that followed its
	 * pointers (imp->exp, imp->obj) would oops, with the lock held, on a
	 * record a bug left dangling, and hang every later ioctl of the pod.
	 */
	mutex_lock(&usim_pod.lock);
	for (i = 0; i < usim_pod.n; i++)
		list_for_each_entry(imp, &usim_pod.accel[i]->imports, imp_link)
			seq_printf(m, "importer %u exporter %u npa 0x%llx size 0x%zx\n",
				   usim_pod.accel[i]->id, imp->exporter_id, imp->npa, imp->size);
	mutex_unlock(&usim_pod.lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(usim_npa);

/* debugfs ualink_sim/faults: UALINK_SIM_FAULT_* */
static int usim_faults_get(void *data, u64 *val)
{
	*val = READ_ONCE(usim_pod.faults);
	return 0;
}

static int usim_faults_set(void *data, u64 val)
{
	u32 flags = DRM_AUTH | DRM_RENDER_ALLOW;

	if (val & ~UALINK_SIM_FAULT_ALL)
		return -EINVAL;
	if (val & UALINK_SIM_FAULT_PRIMARY_NO_AUTH)
		flags &= ~DRM_AUTH;
	if (val & UALINK_SIM_FAULT_ROOT_ONLY)
		flags |= DRM_ROOT_ONLY;
	usim_handle_ioctl_set_flags(flags);
	WRITE_ONCE(usim_pod.faults, val);
	return 0;
}

DEFINE_DEBUGFS_ATTRIBUTE(usim_faults_fops, usim_faults_get, usim_faults_set, "0x%016llx\n");

/* debugfs ualink_sim/plant: UALINK_SIM_PLANT_*, the fuzzer's proof */
static int usim_plant_get(void *data, u64 *val)
{
	*val = READ_ONCE(usim_pod.plant);
	return 0;
}

static int usim_plant_set(void *data, u64 val)
{
	if (val > UALINK_SIM_PLANT_DANGLING_IMPORT)
		return -EINVAL;
	WRITE_ONCE(usim_pod.plant, val);
	return 0;
}

DEFINE_DEBUGFS_ATTRIBUTE(usim_plant_fops, usim_plant_get, usim_plant_set, "%llu\n");

/*
 * debugfs ualink_sim/hold_export_pin, for the model's own tests: 1 holds a
 * new export where it pins its BO, 0 lets every held one go on; reading it
 * answers how many are held there. A test then calls into the pod while an
 * export pins, which must not wait for it.
 */
static DECLARE_WAIT_QUEUE_HEAD(usim_hold_wq);
static bool usim_hold;
static atomic_t usim_held = ATOMIC_INIT(0);

void usim_export_pin_hold(void)
{
	if (!READ_ONCE(usim_hold))
		return;
	atomic_inc(&usim_held);
	wait_event_killable(usim_hold_wq, !READ_ONCE(usim_hold));
	atomic_dec(&usim_held);
}

static int usim_hold_get(void *data, u64 *val)
{
	*val = atomic_read(&usim_held);
	return 0;
}

static int usim_hold_set(void *data, u64 val)
{
	if (val > 1)
		return -EINVAL;
	WRITE_ONCE(usim_hold, val);
	if (!val)
		wake_up_all(&usim_hold_wq);
	return 0;
}

DEFINE_DEBUGFS_ATTRIBUTE(usim_hold_fops, usim_hold_get, usim_hold_set, "%llu\n");

/* ualink_sim/: made once the accelerators are, gone before they are. */
void usim_debugfs_init(void)
{
	usim_pod.debugfs = debugfs_create_dir(UALINK_SIM_DRIVER_NAME, NULL);
	debugfs_create_file_unsafe("faults", 0600, usim_pod.debugfs, NULL, &usim_faults_fops);
	debugfs_create_file("npa", 0400, usim_pod.debugfs, NULL, &usim_npa_fops);
	debugfs_create_file_unsafe("plant", 0600, usim_pod.debugfs, NULL, &usim_plant_fops);
	debugfs_create_file_unsafe("hold_export_pin", 0600, usim_pod.debugfs, NULL, &usim_hold_fops);
}

void usim_debugfs_fini(void)
{
	usim_hold_set(NULL, 0);
	debugfs_remove_recursive(usim_pod.debugfs);
}
