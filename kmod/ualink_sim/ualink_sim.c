// SPDX-License-Identifier: GPL-2.0
/*
 * ualink_sim: a reference model of amdgpu's UALink export/import contract,
 * and a test double for amdgpu. The hardware it stands in for (a pod of
 * accelerators joined by UALink, and the amdgpu driver carrying the posted
 * UALink series) cannot exist here; the conformance cases in cases/ualink/
 * are written once against the ioctl ABI and run against either.
 *
 * The module creates N accelerators of one pod (parameter "accelerators"),
 * each a DRM device with a render node and shmem-backed GEM buffers whose
 * creation names a domain. The UALink handle ioctl has amdgpu's number and
 * layout (uapi/amdgpu_ualink.h) and keeps the contract of the series' v2
 * documentation and its review:
 *
 *  - export of a VRAM BO gives a random 128-bit handle (bits 9:0 of the low
 *    half: the exporter's accelerator id, never all zero); exporting the same
 *    BO again gives the same handle;
 *  - import on another accelerator gives a dma-buf fd of an object that
 *    stands for the exporter's memory through an NPA mapping; the NPA stays
 *    in the kernel; importing again gives the same object; import on the
 *    exporter itself gives the BO's own dma-buf (amdgpu's local import);
 *  - the exporter's BO is pinned once per importer;
 *  - when the BO's GEM handle count reaches 0 the handle is destroyed and
 *    every importer's access is revoked;
 *  - a node reset or offline makes its peers clean up;
 *  - accel_state not "active" gives -EOPNOTSUPP before anything else, and
 *    unknown flags are refused (the posted driver does not check them).
 *
 * Model-only ioctls (uapi/ualink_sim.h) create BOs, perform loads/stores
 * over the simulated fabric and report pins and object counts; a debugfs
 * bitmask turns on known deviations, one bit each, so that the suite can
 * prove it catches them.
 *
 * One mutex (pod.lock) guards all export/import state of the pod: this is a
 * model, clarity beats concurrency.
 */

#include <linux/debugfs.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/kobject.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/random.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_managed.h>
#include <drm/drm_prime.h>

#include "amdgpu_ualink.h"
#include "ualink_sim.h"

#define DRIVER_NAME	UALINK_SIM_DRIVER_NAME
#define DRIVER_DESC	"UALink reference model (test double for amdgpu)"
#define DRIVER_DATE	"20260901"
#define DRIVER_MAJOR	1
#define DRIVER_MINOR	0

#define USIM_MAX_ACCELS		64
/* amdgpu keeps the GPU id in bits 41-50 of an NPA. */
#define USIM_NPA_GPUID_SHIFT	41
/* amdgpu reserves the first 2 MiB of each NPA segment. */
#define USIM_NPA_FIRST		SZ_2M

static unsigned int accelerators = 4;
module_param(accelerators, uint, 0444);
MODULE_PARM_DESC(accelerators, "Accelerators in the simulated pod (1-64, default 4)");

/* amdgpu's enum amdgpu_ualink_accel_state, shown by name in sysfs. */
enum usim_state {
	USIM_STATE_UNCONFIGURED,
	USIM_STATE_PPOD_CONFIGURED,
	USIM_STATE_VPOD_CONFIGURED,
	USIM_STATE_READY,
	USIM_STATE_ACTIVE,
	USIM_STATE_ERROR,
	USIM_STATE_MAX
};

static const char * const usim_state_names[USIM_STATE_MAX] = {
	[USIM_STATE_UNCONFIGURED]	= "unconfigured",
	[USIM_STATE_PPOD_CONFIGURED]	= "ppod_configured",
	[USIM_STATE_VPOD_CONFIGURED]	= "vpod_configured",
	[USIM_STATE_READY]		= "ready",
	[USIM_STATE_ACTIVE]		= "active",
	[USIM_STATE_ERROR]		= "error",
};

struct usim_accel {
	struct drm_device drm;
	struct platform_device *pdev;
	struct kobject *kobj;		/* <dev>/ualink */
	u32 id;
	int state;			/* enum usim_state */
	struct xarray exports;		/* handle_lo -> struct usim_export */
	struct list_head imports;	/* struct usim_import held here */
	u64 npa_next;			/* bump allocator of its NPA segment */
	u64 seq;			/* UALINK_SIM_FAULT_SEQUENTIAL_HANDLES */
};

static struct {
	struct mutex lock;		/* everything below and in the objects */
	unsigned int n;
	struct usim_accel *accel[USIM_MAX_ACCELS];
	u32 faults;			/* UALINK_SIM_FAULT_*, from debugfs */
	struct dentry *debugfs;
	atomic64_t bos;			/* changed in .free, outside the lock */
	atomic64_t remote_objects;
	u64 exports;
	u64 imports;
	u64 pins;
	u64 resets;
} pod = {
	.lock = __MUTEX_INITIALIZER(pod.lock),
};

/* A buffer object of one accelerator: its own memory. */
struct usim_bo {
	struct drm_gem_shmem_object base;
	u32 domains;
	bool counted;			/* created by GEM_CREATE */
	unsigned int handles;		/* GEM handles, all files */
	unsigned int pins;		/* one per importer */
	unsigned int moves;
	struct usim_export *export;
};

/* The exporter's record of a UALink handle (amdgpu: exp_xa node). */
struct usim_export {
	struct usim_accel *accel;
	struct usim_bo *bo;		/* a GEM reference and a page pin */
	u64 lo;
	u64 hi;
	struct list_head importers;	/* struct usim_import.exp_link */
};

/* The importer's record of an imported handle (amdgpu: imp_xa node). */
struct usim_import {
	struct usim_accel *importer;
	struct usim_export *exp;
	struct usim_remote *obj;
	struct dma_buf *dmabuf;		/* handed out again on re-import */
	u64 lo;
	u64 hi;
	u64 npa;			/* never leaves the kernel */
	bool pinned;
	struct list_head exp_link;
	struct list_head imp_link;
};

/* On the importer: the exporter's memory, reached through the NPA. */
struct usim_remote {
	struct drm_gem_object base;
	struct usim_import *imp;	/* NULL once access is revoked */
};

static const struct drm_gem_object_funcs usim_bo_funcs;
static const struct drm_gem_object_funcs usim_remote_funcs;

static bool usim_fault(u32 bit)
{
	return READ_ONCE(pod.faults) & bit;
}

static struct usim_accel *to_accel(struct drm_device *dev)
{
	return container_of(dev, struct usim_accel, drm);
}

static struct usim_bo *to_usim_bo(struct drm_gem_object *obj)
{
	return container_of(to_drm_gem_shmem_obj(obj), struct usim_bo, base);
}

static struct usim_remote *to_usim_remote(struct drm_gem_object *obj)
{
	return container_of(obj, struct usim_remote, base);
}

static bool usim_is_bo(struct drm_gem_object *obj)
{
	return obj->funcs == &usim_bo_funcs;
}

static bool usim_is_remote(struct drm_gem_object *obj)
{
	return obj->funcs == &usim_remote_funcs;
}

/* Importer side: access is revoked, the user's object stays. */
static void usim_import_destroy(struct usim_import *imp)
{
	lockdep_assert_held(&pod.lock);
	list_del(&imp->exp_link);
	list_del(&imp->imp_link);
	imp->obj->imp = NULL;
	if (imp->pinned) {
		imp->exp->bo->pins--;
		pod.pins--;
	}
	dma_buf_put(imp->dmabuf);
	kfree(imp);
	pod.imports--;
}

/* The handle dies: every importer loses access (remote TLB shootdown). */
static void usim_export_destroy(struct usim_export *exp)
{
	struct usim_import *imp, *tmp;
	struct usim_bo *bo = exp->bo;

	lockdep_assert_held(&pod.lock);
	list_for_each_entry_safe(imp, tmp, &exp->importers, exp_link)
		usim_import_destroy(imp);
	xa_erase(&exp->accel->exports, exp->lo);
	bo->export = NULL;
	drm_gem_shmem_unpin(&bo->base);
	drm_gem_object_put(&bo->base.base);
	kfree(exp);
	pod.exports--;
}

/*
 * A node reset or gone offline: what it exported and imported is lost, and
 * its peers clean up their side (importers of its memory lose access,
 * exporters drop the pins they held for it).
 */
static void usim_node_lost(struct usim_accel *accel, bool force)
{
	struct usim_import *imp, *tmp;
	struct usim_export *exp;
	unsigned long index;

	lockdep_assert_held(&pod.lock);
	if (!force && usim_fault(UALINK_SIM_FAULT_NO_PEER_CLEANUP))
		return;
	list_for_each_entry_safe(imp, tmp, &accel->imports, imp_link)
		usim_import_destroy(imp);
	xa_for_each(&accel->exports, index, exp)
		usim_export_destroy(exp);
}

/* Buffer objects */

static int usim_bo_open(struct drm_gem_object *obj, struct drm_file *file)
{
	mutex_lock(&pod.lock);
	to_usim_bo(obj)->handles++;
	mutex_unlock(&pod.lock);
	return 0;
}

/*
 * 6.1 has no callback for "GEM handle count reached 0" (the series adds
 * drm_gem_object_funcs.handle_free for it), but .open and .close run once
 * per handle: counting them gives the same moment.
 */
static void usim_bo_close(struct drm_gem_object *obj, struct drm_file *file)
{
	struct usim_bo *bo = to_usim_bo(obj);

	mutex_lock(&pod.lock);
	if (bo->handles && !--bo->handles && bo->export &&
	    !usim_fault(UALINK_SIM_FAULT_NO_REVOKE_ON_CLOSE))
		usim_export_destroy(bo->export);
	mutex_unlock(&pod.lock);
}

static void usim_bo_free(struct drm_gem_object *obj)
{
	bool counted = to_usim_bo(obj)->counted;

	drm_gem_shmem_free(to_drm_gem_shmem_obj(obj));
	if (counted)
		atomic64_dec(&pod.bos);
}

static const struct drm_gem_object_funcs usim_bo_funcs = {
	.free = usim_bo_free,
	.open = usim_bo_open,
	.close = usim_bo_close,
	.print_info = drm_gem_shmem_object_print_info,
	.pin = drm_gem_shmem_object_pin,
	.unpin = drm_gem_shmem_object_unpin,
	.get_sg_table = drm_gem_shmem_object_get_sg_table,
	.vmap = drm_gem_shmem_object_vmap,
	.vunmap = drm_gem_shmem_object_vunmap,
	.mmap = drm_gem_shmem_object_mmap,
	.vm_ops = &drm_gem_shmem_vm_ops,
};

static struct drm_gem_object *usim_gem_create_object(struct drm_device *dev, size_t size)
{
	struct usim_bo *bo;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->base.base.funcs = &usim_bo_funcs;
	/* Remote stores go through kernel mappings: keep what they wrote. */
	bo->base.pages_mark_dirty_on_put = true;
	return &bo->base.base;
}

/* Imported objects */

static void usim_remote_free(struct drm_gem_object *obj)
{
	drm_gem_object_release(obj);
	kfree(to_usim_remote(obj));
	atomic64_dec(&pod.remote_objects);
}

/* "Remote NPAs ... cannot be CPU mapped" (v2 documentation). */
static int usim_remote_mmap(struct drm_gem_object *obj, struct vm_area_struct *vma)
{
	return -EPERM;
}

/* Nor can another device attach: there are no pages on this side. */
static int usim_remote_pin(struct drm_gem_object *obj)
{
	return -EOPNOTSUPP;
}

static struct sg_table *usim_remote_get_sg_table(struct drm_gem_object *obj)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static const struct drm_gem_object_funcs usim_remote_funcs = {
	.free = usim_remote_free,
	.pin = usim_remote_pin,
	.get_sg_table = usim_remote_get_sg_table,
	.mmap = usim_remote_mmap,
};

/* Export */

static void usim_new_handle(struct usim_accel *accel, u64 *lo, u64 *hi)
{
	if (usim_fault(UALINK_SIM_FAULT_SEQUENTIAL_HANDLES)) {
		accel->seq++;
		*lo = (accel->seq << AMDGPU_UALINK_HANDLE_ACCID_BITS) | accel->id;
		*hi = accel->seq;
		return;
	}
	/* Random, the accelerator id in bits 9:0, never 0, unique here. */
	do {
		*lo = get_random_u64() & ~AMDGPU_UALINK_HANDLE_ACCID_MASK_U64;
		*lo |= accel->id;
	} while (!*lo || xa_load(&accel->exports, *lo));
	*hi = get_random_u64();
}

static int usim_index_export(struct usim_accel *accel, struct usim_export *exp)
{
	int ret;

	do {
		usim_new_handle(accel, &exp->lo, &exp->hi);
		ret = xa_insert(&accel->exports, exp->lo, exp, GFP_KERNEL);
	} while (ret == -EBUSY);
	return ret;
}

static struct usim_export *usim_export_create(struct usim_accel *accel, struct usim_bo *bo)
{
	struct usim_export *exp;
	int ret;

	exp = kzalloc(sizeof(*exp), GFP_KERNEL);
	if (!exp)
		return ERR_PTR(-ENOMEM);
	/* The fabric reaches the pages directly: keep them while exported. */
	ret = drm_gem_shmem_pin(&bo->base);
	if (ret)
		goto err_free;
	exp->accel = accel;
	exp->bo = bo;
	INIT_LIST_HEAD(&exp->importers);
	ret = usim_index_export(accel, exp);
	if (ret)
		goto err_unpin;
	drm_gem_object_get(&bo->base.base);
	bo->export = exp;
	pod.exports++;
	return exp;

err_unpin:
	drm_gem_shmem_unpin(&bo->base);
err_free:
	kfree(exp);
	return ERR_PTR(ret);
}

static int usim_export(struct usim_accel *accel, struct drm_file *file, u32 gem_handle,
		       u64 *lo, u64 *hi)
{
	struct drm_gem_object *obj;
	struct usim_export *exp;
	struct usim_bo *bo;
	u32 allowed;
	int ret = 0;

	obj = drm_gem_object_lookup(file, gem_handle);
	if (!obj)
		return -ENOENT;
	/* Only this accelerator's own memory has a place in its NPA space. */
	if (!usim_is_bo(obj) || obj->import_attach || obj->dev != &accel->drm) {
		ret = -EOPNOTSUPP;
		goto out_put;
	}
	bo = to_usim_bo(obj);
	/* amdgpu: "Only VRAM BOs can be exported" (preferred domains). */
	allowed = UALINK_SIM_DOMAIN_VRAM;
	if (usim_fault(UALINK_SIM_FAULT_GTT_EXPORT))
		allowed |= UALINK_SIM_DOMAIN_GTT;
	if (!(bo->domains & allowed)) {
		ret = -EOPNOTSUPP;
		goto out_put;
	}

	mutex_lock(&pod.lock);
	/*
	 * The ioctl checked accel_state unlocked: if the node went offline
	 * since, its cleanup has run and nothing may be registered after it.
	 */
	if (accel->state != USIM_STATE_ACTIVE) {
		ret = -EOPNOTSUPP;
		goto out_unlock;
	}
	/* Its last handle went while we looked it up. */
	if (!bo->handles) {
		ret = -ENOENT;
		goto out_unlock;
	}
	exp = bo->export;
	if (exp && usim_fault(UALINK_SIM_FAULT_EXPORT_NOT_IDEMPOTENT)) {
		xa_erase(&accel->exports, exp->lo);
		ret = usim_index_export(accel, exp);
		if (ret) {
			/* Unindexed, it could never be found again. */
			usim_export_destroy(exp);
			goto out_unlock;
		}
	}
	if (!exp) {
		exp = usim_export_create(accel, bo);
		if (IS_ERR(exp)) {
			ret = PTR_ERR(exp);
			goto out_unlock;
		}
	}
	*lo = exp->lo;
	*hi = exp->hi;
out_unlock:
	mutex_unlock(&pod.lock);
out_put:
	drm_gem_object_put(obj);
	return ret;
}

/* Import */

/* The BO's own dma-buf, one per object, as PRIME export would give it. */
static struct dma_buf *usim_bo_dmabuf(struct drm_gem_object *obj)
{
	struct drm_device *dev = obj->dev;
	struct dma_buf *dmabuf;

	mutex_lock(&dev->object_name_lock);
	if (obj->dma_buf) {
		dmabuf = obj->dma_buf;
		get_dma_buf(dmabuf);
	} else if (!obj->handle_count) {
		dmabuf = ERR_PTR(-ENOENT);
	} else {
		dmabuf = drm_gem_prime_export(obj, O_RDWR);
		if (!IS_ERR(dmabuf)) {
			/* Cached as drm_gem_prime_handle_to_fd() caches it. */
			obj->dma_buf = dmabuf;
			get_dma_buf(dmabuf);
		}
	}
	mutex_unlock(&dev->object_name_lock);
	return dmabuf;
}

/* amdgpu_ualink_local_import(): no NPA, the exporter's own dma-buf. */
static struct dma_buf *usim_local_import(struct usim_accel *accel, u64 lo, u64 hi)
{
	struct drm_gem_object *obj;
	struct usim_export *exp;
	struct dma_buf *dmabuf;

	mutex_lock(&pod.lock);
	exp = xa_load(&accel->exports, lo);
	if (!exp || exp->hi != hi) {
		mutex_unlock(&pod.lock);
		return ERR_PTR(-EINVAL);
	}
	obj = &exp->bo->base.base;
	drm_gem_object_get(obj);
	mutex_unlock(&pod.lock);

	/* object_name_lock is never taken under pod.lock. */
	dmabuf = usim_bo_dmabuf(obj);
	drm_gem_object_put(obj);
	return dmabuf;
}

/* Imported here before: a new reference to the same object. */
static struct usim_import *usim_find_import(struct usim_accel *accel, u64 lo, u64 hi, int *err)
{
	struct usim_import *imp;

	*err = 0;
	if (usim_fault(UALINK_SIM_FAULT_REIMPORT_NEW_OBJECT))
		return NULL;
	list_for_each_entry(imp, &accel->imports, imp_link) {
		if (imp->lo != lo)
			continue;
		/* The posted driver matches handle_lo alone here. */
		if (imp->hi != hi && !usim_fault(UALINK_SIM_FAULT_LOW_HALF_MATCH)) {
			*err = -EINVAL;
			return NULL;
		}
		return imp;
	}
	return NULL;
}

/*
 * The NPA-REQ/NPA-RSP exchange with the exporter, done directly: peers of
 * the model share one lock instead of a firmware mailbox.
 */
static struct usim_import *usim_import_create(struct usim_accel *accel, struct usim_accel *peer,
					      u64 lo, u64 hi, int *err)
{
	struct usim_remote *obj;
	struct usim_import *imp;
	struct usim_export *exp;
	struct dma_buf *dmabuf;
	size_t size;

	/* An offline peer never answers: amdgpu times the request out. */
	if (peer->state != USIM_STATE_ACTIVE) {
		*err = -ETIMEDOUT;
		return NULL;
	}
	exp = xa_load(&peer->exports, lo);
	if (!exp || exp->hi != hi) {
		*err = -EINVAL;
		return NULL;
	}
	size = exp->bo->base.base.size;

	imp = kzalloc(sizeof(*imp), GFP_KERNEL);
	obj = kzalloc(sizeof(*obj), GFP_KERNEL);
	if (!imp || !obj) {
		kfree(imp);
		kfree(obj);
		*err = -ENOMEM;
		return NULL;
	}
	obj->base.funcs = &usim_remote_funcs;
	drm_gem_private_object_init(&accel->drm, &obj->base, size);
	atomic64_inc(&pod.remote_objects);
	dmabuf = drm_gem_prime_export(&obj->base, O_RDWR);
	/* From here on the dma-buf holds the object. */
	drm_gem_object_put(&obj->base);
	if (IS_ERR(dmabuf)) {
		kfree(imp);
		*err = PTR_ERR(dmabuf);
		return NULL;
	}

	imp->importer = accel;
	imp->exp = exp;
	imp->obj = obj;
	imp->dmabuf = dmabuf;
	imp->lo = lo;
	imp->hi = hi;
	imp->npa = ((u64)peer->id << USIM_NPA_GPUID_SHIFT) | peer->npa_next;
	peer->npa_next = (peer->npa_next + PAGE_ALIGN(size)) & GENMASK_ULL(40, 0);
	if (peer->npa_next < USIM_NPA_FIRST)
		peer->npa_next = USIM_NPA_FIRST;
	obj->imp = imp;
	/* "Exported memory is pinned": once per importer, as amdgpu does. */
	if (!usim_fault(UALINK_SIM_FAULT_NO_IMPORT_PIN)) {
		exp->bo->pins++;
		imp->pinned = true;
		pod.pins++;
	}
	list_add_tail(&imp->exp_link, &exp->importers);
	list_add_tail(&imp->imp_link, &accel->imports);
	pod.imports++;
	return imp;
}

static int usim_import(struct usim_accel *accel, u64 lo, u64 hi, int *fd, u64 *npa)
{
	u32 id = lo & AMDGPU_UALINK_HANDLE_ACCID_MASK_U64;
	struct usim_import *imp = NULL;
	struct dma_buf *dmabuf = NULL;
	struct usim_accel *peer;
	int ret = 0;

	*npa = 0;
	if (id >= AMDGPU_UALINK_ACCEL_MAX_IDS)
		return -EINVAL;

	mutex_lock(&pod.lock);
	peer = id < pod.n ? pod.accel[id] : NULL;
	/* Gone offline since the unlocked check: as in usim_export(). */
	if (accel->state != USIM_STATE_ACTIVE) {
		peer = NULL;
		ret = -EOPNOTSUPP;
	} else if (!peer) {
		ret = -ENODEV;
	} else if (peer != accel) {
		imp = usim_find_import(accel, lo, hi, &ret);
		if (!imp && !ret)
			imp = usim_import_create(accel, peer, lo, hi, &ret);
	}
	if (imp) {
		dmabuf = imp->dmabuf;
		get_dma_buf(dmabuf);
		*npa = imp->npa;
	}
	mutex_unlock(&pod.lock);

	if (peer == accel) {
		dmabuf = usim_local_import(accel, lo, hi);
		if (IS_ERR(dmabuf))
			return PTR_ERR(dmabuf);
	} else if (!imp) {
		return ret;
	}

	ret = dma_buf_fd(dmabuf, O_CLOEXEC);
	if (ret < 0) {
		dma_buf_put(dmabuf);
		return ret;
	}
	*fd = ret;
	return 0;
}

/* DRM_IOCTL_AMDGPU_UALINK_HANDLE */
static int usim_ualink_handle_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	union drm_amdgpu_ualink_handle *args = data;
	struct usim_accel *accel = to_accel(dev);
	bool state_late = usim_fault(UALINK_SIM_FAULT_STATE_AFTER_OP);
	u32 op, flags, gem_handle;
	u64 lo, hi, npa;
	int ret, fd;

	/* As amdgpu: not an active member of a pod, nothing else is looked at. */
	if (!state_late && READ_ONCE(accel->state) != USIM_STATE_ACTIVE)
		return -EOPNOTSUPP;

	/* in and out alias each other: latch every input before any output. */
	op = args->in.op;
	flags = args->in.flags;
	gem_handle = args->in.gem_handle;
	lo = args->in.import_ualink_handle[0];
	hi = args->in.import_ualink_handle[1];
	if (usim_fault(UALINK_SIM_FAULT_GEM_HANDLE_WIDE))
		gem_handle = lo > U32_MAX ? 0 : lo;

	/* No flag is defined: refuse them all, so they can get a meaning later. */
	if (flags && !usim_fault(UALINK_SIM_FAULT_FLAGS_UNCHECKED))
		return -EINVAL;
	if (op != DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT && op != DRM_AMDGPU_UALINK_HANDLE_OP_IMPORT)
		return -EINVAL;
	if (state_late && READ_ONCE(accel->state) != USIM_STATE_ACTIVE)
		return -EOPNOTSUPP;

	if (op == DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT) {
		ret = usim_export(accel, file, gem_handle, &lo, &hi);
		if (!ret) {
			args->out.export_ualink_handle[0] = lo;
			args->out.export_ualink_handle[1] = hi;
		}
		return ret;
	}

	ret = usim_import(accel, lo, hi, &fd, &npa);
	if (ret)
		return ret;
	args->out.import_dmabuf_handle = fd;
	if (npa && usim_fault(UALINK_SIM_FAULT_NPA_LEAK))
		args->out.export_ualink_handle[1] = npa;
	return 0;
}

/* Model-only ioctls */

static int usim_gem_create_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_ualink_sim_gem_create *args = data;
	struct drm_gem_shmem_object *shmem;
	struct usim_bo *bo;
	int ret;

	/* pad too: a field that may get a meaning later must be 0 now. */
	if (!args->size || args->size > UALINK_SIM_BO_MAX_SIZE || args->flags || args->pad)
		return -EINVAL;
	if (!args->domains ||
	    args->domains & ~(UALINK_SIM_DOMAIN_GTT | UALINK_SIM_DOMAIN_VRAM))
		return -EINVAL;

	shmem = drm_gem_shmem_create(dev, args->size);
	if (IS_ERR(shmem))
		return PTR_ERR(shmem);
	bo = to_usim_bo(&shmem->base);
	bo->domains = args->domains;
	bo->counted = true;
	atomic64_inc(&pod.bos);
	ret = drm_gem_handle_create(file, &shmem->base, &args->handle);
	drm_gem_object_put(&shmem->base);
	return ret;
}

static int usim_gem_mmap_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_ualink_sim_gem_mmap *args = data;
	struct drm_gem_object *obj;
	int ret = 0;

	if (args->pad)
		return -EINVAL;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	if (!usim_is_bo(obj) || obj->import_attach)
		ret = -EPERM;
	else
		args->offset = drm_vma_node_offset_addr(&obj->vma_node);
	drm_gem_object_put(obj);
	return ret;
}

static int usim_gem_info_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_ualink_sim_gem_info *args = data;
	struct drm_gem_object *obj;
	struct usim_bo *bo;
	u32 handle = args->handle;

	obj = drm_gem_object_lookup(file, handle);
	if (!obj)
		return -ENOENT;
	memset(args, 0, sizeof(*args));
	args->handle = handle;
	args->size = obj->size;
	mutex_lock(&pod.lock);
	if (usim_is_remote(obj)) {
		args->kind = UALINK_SIM_GEM_KIND_REMOTE;
		args->revoked = !to_usim_remote(obj)->imp;
	} else if (usim_is_bo(obj)) {
		bo = to_usim_bo(obj);
		args->kind = UALINK_SIM_GEM_KIND_BO;
		args->domains = bo->domains;
		args->pins = bo->pins;
		args->moves = bo->moves;
		args->exported = !!bo->export;
		args->handles = bo->handles;
	}
	mutex_unlock(&pod.lock);
	drm_gem_object_put(obj);
	return 0;
}

/* What TTM eviction would do to a BO under memory pressure. */
static int usim_gem_evict_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_ualink_sim_gem_evict *args = data;
	struct drm_gem_object *obj;
	struct usim_bo *bo;
	int ret = 0;

	if (args->pad)
		return -EINVAL;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	if (!usim_is_bo(obj) || obj->import_attach) {
		drm_gem_object_put(obj);
		return -EINVAL;
	}
	bo = to_usim_bo(obj);
	mutex_lock(&pod.lock);
	if (bo->pins)
		ret = -EBUSY;
	else
		bo->moves++;
	mutex_unlock(&pod.lock);
	drm_gem_object_put(obj);
	return ret;
}

/* Copies between @buf and the exporter's pages, pinned while exported. */
static void usim_fabric_copy(struct usim_bo *bo, u64 offset, void *buf, size_t size, bool write)
{
	while (size) {
		struct page *page = bo->base.pages[offset >> PAGE_SHIFT];
		size_t in_page = offset & ~PAGE_MASK;
		size_t len = min_t(size_t, size, PAGE_SIZE - in_page);
		void *vaddr = kmap_local_page(page);

		if (write)
			memcpy(vaddr + in_page, buf, len);
		else
			memcpy(buf, vaddr + in_page, len);
		kunmap_local(vaddr);
		buf += len;
		offset += len;
		size -= len;
	}
}

static int usim_remote_access_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_ualink_sim_remote_access *args = data;
	bool write = args->op == UALINK_SIM_ACCESS_WRITE;
	void __user *user = u64_to_user_ptr(args->data);
	struct drm_gem_object *obj;
	struct usim_import *imp;
	void *buf;
	int ret = 0;

	if (args->op > UALINK_SIM_ACCESS_WRITE || !args->size ||
	    args->size > UALINK_SIM_ACCESS_MAX)
		return -EINVAL;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	if (!usim_is_remote(obj) || args->offset > obj->size ||
	    args->size > obj->size - args->offset) {
		ret = -EINVAL;
		goto out_put;
	}
	/* A bounce buffer: no user page fault while pod.lock is held. */
	buf = kvmalloc(args->size, GFP_KERNEL);
	if (!buf) {
		ret = -ENOMEM;
		goto out_put;
	}
	if (write && copy_from_user(buf, user, args->size)) {
		ret = -EFAULT;
		goto out_free;
	}
	mutex_lock(&pod.lock);
	imp = to_usim_remote(obj)->imp;
	if (imp)
		usim_fabric_copy(imp->exp->bo, args->offset, buf, args->size, write);
	else
		ret = -ENOLINK;
	mutex_unlock(&pod.lock);
	if (!ret && !write && copy_to_user(user, buf, args->size))
		ret = -EFAULT;
out_free:
	kvfree(buf);
out_put:
	drm_gem_object_put(obj);
	return ret;
}

static int usim_pod_stats_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_ualink_sim_pod_stats *args = data;

	memset(args, 0, sizeof(*args));
	args->accel_id = to_accel(dev)->id;
	mutex_lock(&pod.lock);
	args->accelerators = pod.n;
	args->exports = pod.exports;
	args->imports = pod.imports;
	args->pins = pod.pins;
	args->resets = pod.resets;
	mutex_unlock(&pod.lock);
	args->bos = atomic64_read(&pod.bos);
	args->remote_objects = atomic64_read(&pod.remote_objects);
	return 0;
}

static const struct drm_ioctl_desc usim_ioctls[] = {
	DRM_IOCTL_DEF_DRV(UALINK_SIM_GEM_CREATE, usim_gem_create_ioctl, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(UALINK_SIM_GEM_MMAP, usim_gem_mmap_ioctl, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(UALINK_SIM_GEM_INFO, usim_gem_info_ioctl, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(UALINK_SIM_GEM_EVICT, usim_gem_evict_ioctl, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(UALINK_SIM_REMOTE_ACCESS, usim_remote_access_ioctl, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(UALINK_SIM_POD_STATS, usim_pod_stats_ioctl, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(AMDGPU_UALINK_HANDLE, usim_ualink_handle_ioctl,
			  DRM_AUTH | DRM_RENDER_ALLOW),
};

DEFINE_DRM_GEM_FOPS(usim_fops);

static const struct drm_driver usim_driver = {
	.driver_features		= DRIVER_GEM | DRIVER_RENDER,
	.ioctls				= usim_ioctls,
	.num_ioctls			= ARRAY_SIZE(usim_ioctls),
	.fops				= &usim_fops,
	.gem_create_object		= usim_gem_create_object,
	.prime_handle_to_fd		= drm_gem_prime_handle_to_fd,
	.prime_fd_to_handle		= drm_gem_prime_fd_to_handle,
	.gem_prime_import_sg_table	= drm_gem_shmem_prime_import_sg_table,
	.gem_prime_mmap			= drm_gem_prime_mmap,
	.name				= DRIVER_NAME,
	.desc				= DRIVER_DESC,
	.date				= DRIVER_DATE,
	.major				= DRIVER_MAJOR,
	.minor				= DRIVER_MINOR,
};

/* sysfs: <dev>/ualink, named and shaped as amdgpu's */

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
	mutex_lock(&pod.lock);
	if (accel->state == USIM_STATE_ACTIVE && state != USIM_STATE_ACTIVE) {
		pod.resets++;
		usim_node_lost(accel, false);
	}
	WRITE_ONCE(accel->state, state);
	mutex_unlock(&pod.lock);
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
	unsigned int i, n = READ_ONCE(pod.n);
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
		mutex_lock(&pod.lock);
		pod.resets++;
		usim_node_lost(accel, false);
		mutex_unlock(&pod.lock);
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

static const struct attribute_group usim_attr_group = {
	.attrs = usim_attrs,
};

/* debugfs: NPAs as only the kernel drivers see them */

static int usim_npa_show(struct seq_file *m, void *unused)
{
	struct usim_import *imp;
	unsigned int i;

	mutex_lock(&pod.lock);
	for (i = 0; i < pod.n; i++)
		list_for_each_entry(imp, &pod.accel[i]->imports, imp_link)
			seq_printf(m, "importer %u exporter %u npa 0x%llx size 0x%zx\n",
				   imp->importer->id, imp->exp->accel->id, imp->npa,
				   imp->obj->base.size);
	mutex_unlock(&pod.lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(usim_npa);

/* Module */

static void usim_accel_destroy(struct usim_accel *accel)
{
	struct platform_device *pdev = accel->pdev;

	kobject_put(accel->kobj);
	drm_dev_unregister(&accel->drm);
	devres_release_group(&pdev->dev, NULL);
	platform_device_unregister(pdev);
}

static int usim_accel_create(unsigned int id)
{
	struct platform_device *pdev;
	struct usim_accel *accel;
	int ret;

	pdev = platform_device_register_simple(DRIVER_NAME, id, NULL, 0);
	if (IS_ERR(pdev))
		return PTR_ERR(pdev);
	if (!devres_open_group(&pdev->dev, NULL, GFP_KERNEL)) {
		ret = -ENOMEM;
		goto err_unregister;
	}
	/* No DMA happens; PRIME between accelerators needs a mask all the same. */
	dma_coerce_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));

	accel = devm_drm_dev_alloc(&pdev->dev, &usim_driver, struct usim_accel, drm);
	if (IS_ERR(accel)) {
		ret = PTR_ERR(accel);
		goto err_devres;
	}
	accel->pdev = pdev;
	accel->id = id;
	accel->state = USIM_STATE_ACTIVE;
	accel->npa_next = USIM_NPA_FIRST;
	xa_init(&accel->exports);
	INIT_LIST_HEAD(&accel->imports);
	platform_set_drvdata(pdev, accel);

	accel->kobj = kobject_create_and_add("ualink", &pdev->dev.kobj);
	if (!accel->kobj) {
		ret = -ENOMEM;
		goto err_devres;
	}
	ret = sysfs_create_group(accel->kobj, &usim_attr_group);
	if (ret)
		goto err_kobj;

	mutex_lock(&pod.lock);
	pod.accel[id] = accel;
	pod.n = id + 1;
	mutex_unlock(&pod.lock);

	ret = drm_dev_register(&accel->drm, 0);
	if (ret)
		goto err_pod;
	return 0;

err_pod:
	mutex_lock(&pod.lock);
	pod.n = id;
	pod.accel[id] = NULL;
	mutex_unlock(&pod.lock);
err_kobj:
	kobject_put(accel->kobj);
err_devres:
	devres_release_group(&pdev->dev, NULL);
err_unregister:
	platform_device_unregister(pdev);
	return ret;
}

static void usim_pod_destroy(void)
{
	unsigned int i;

	/*
	 * Imports hold dma-bufs, which hold this module: none is left when
	 * exit runs. Exports can outlive their handles with a fault bit set.
	 */
	mutex_lock(&pod.lock);
	for (i = 0; i < pod.n; i++)
		usim_node_lost(pod.accel[i], true);
	mutex_unlock(&pod.lock);

	while (pod.n) {
		mutex_lock(&pod.lock);
		i = --pod.n;
		mutex_unlock(&pod.lock);
		usim_accel_destroy(pod.accel[i]);
		pod.accel[i] = NULL;
	}
}

static int __init usim_init(void)
{
	unsigned int i;
	int ret;

	BUILD_BUG_ON(sizeof(unsigned long) < sizeof(u64));
	if (!accelerators || accelerators > USIM_MAX_ACCELS)
		return -EINVAL;

	for (i = 0; i < accelerators; i++) {
		ret = usim_accel_create(i);
		if (ret) {
			usim_pod_destroy();
			return ret;
		}
	}
	pod.debugfs = debugfs_create_dir(DRIVER_NAME, NULL);
	debugfs_create_x32("faults", 0600, pod.debugfs, &pod.faults);
	debugfs_create_file("npa", 0400, pod.debugfs, NULL, &usim_npa_fops);
	return 0;
}

static void __exit usim_exit(void)
{
	debugfs_remove_recursive(pod.debugfs);
	usim_pod_destroy();
}

module_init(usim_init);
module_exit(usim_exit);

MODULE_DESCRIPTION(DRIVER_DESC);
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(DMA_BUF);
