// SPDX-License-Identifier: GPL-2.0
/*
 * ualink_sim: the UALink handles, as amdgpu's contract has them. Export of
 * a VRAM BO (a handle, a pin, the pod-wide cap), import on a peer (an NPA
 * and a remote object that stands for the exporter's memory) or on the
 * exporter (the BO's own dma-buf), revoke when a handle dies or a node is
 * lost, the handle ioctl itself, and the model-only ioctls over the fabric
 * (loads and stores) and of the pod (its counts).
 */

#include <linux/dma-buf.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_prime.h>
#include <drm/drm_print.h>

#include "amdgpu_ualink.h"
#include "ualink_sim.h"
#include "usim_drv.h"

/* Revoke: a handle that dies, a node that is lost */

/*
 * Importer side: access is revoked (or the last user let go), the user's
 * object stays. A reference the import holds on it is not its last: a
 * user's or the dma-buf's is the last, and the object's free finds no
 * import then, so it takes no lock.
 */
static void usim_import_destroy(struct usim_import *imp)
{
	lockdep_assert_held(&usim_pod.lock);
	list_del(&imp->exp_link);
	if (READ_ONCE(usim_pod.plant) != UALINK_SIM_PLANT_DANGLING_IMPORT)
		list_del(&imp->imp_link);
	usim_remote_revoke_mappings(imp);
	imp->obj->imp = NULL;
	imp->exp->bo->pins -= imp->pins;
	usim_pod.pins -= imp->pins;
	if (imp->holds_obj)
		drm_gem_object_put(&imp->obj->base);
	kfree(imp);
	usim_pod.imports--;
}

/* The handle dies: every importer loses access (remote TLB shootdown). */
void usim_export_destroy(struct usim_export *exp)
{
	struct usim_import *imp, *tmp;
	struct usim_bo *bo = exp->bo;

	lockdep_assert_held(&usim_pod.lock);
	list_for_each_entry_safe(imp, tmp, &exp->importers, exp_link)
		usim_import_destroy(imp);
	xa_erase(&exp->accel->exports, exp->lo);
	bo->export = NULL;
	drm_gem_shmem_unpin(&bo->base);
	usim_pod.pinned_pages -= bo->base.base.size >> PAGE_SHIFT;
	drm_gem_object_put(&bo->base.base);
	kfree(exp);
	usim_pod.exports--;
}

void usim_keep_revoked(struct usim_export *exp)
{
	struct usim_revoked *r;

	lockdep_assert_held(&usim_pod.lock);
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return;
	r->hi = exp->hi;
	r->obj = &exp->bo->base.base;
	drm_gem_object_get(r->obj);
	if (xa_insert(&exp->accel->revoked, exp->lo, r, GFP_KERNEL)) {
		drm_gem_object_put(r->obj);
		kfree(r);
	}
}

static void usim_forget_revoked(struct usim_accel *accel)
{
	struct usim_revoked *r;
	unsigned long index;

	lockdep_assert_held(&usim_pod.lock);
	xa_for_each(&accel->revoked, index, r) {
		xa_erase(&accel->revoked, index);
		drm_gem_object_put(r->obj);
		kfree(r);
	}
}

/* Every importer of @exp loses access; the handle stays. */
static void usim_export_drop_importers(struct usim_export *exp)
{
	struct usim_import *imp;

	lockdep_assert_held(&usim_pod.lock);
	while (!list_empty(&exp->importers)) {
		imp = list_first_entry(&exp->importers, struct usim_import, exp_link);
		usim_import_destroy(imp);
	}
}

/*
 * A node reset or gone offline: what it exported and imported is lost, and
 * its peers clean up their side (importers of its memory lose access,
 * exporters drop the pins they held for it), and only its side.
 */
void usim_node_lost(struct usim_accel *accel, bool force)
{
	struct usim_import *imp;
	struct usim_export *exp;
	unsigned long index;

	lockdep_assert_held(&usim_pod.lock);
	usim_forget_revoked(accel);
	if (!force && usim_fault(UALINK_SIM_FAULT_NO_PEER_CLEANUP))
		return;
	while (!list_empty(&accel->imports)) {
		imp = list_first_entry(&accel->imports, struct usim_import, imp_link);
		if (!force && usim_fault(UALINK_SIM_FAULT_RESET_DROPS_ALL_IMPORTERS))
			usim_export_drop_importers(imp->exp);
		else
			usim_import_destroy(imp);
	}
	xa_for_each(&accel->exports, index, exp)
		usim_export_destroy(exp);
}

/*
 * A DRM file of @accel closes (after its GEM handles did): the exports it
 * made no longer name it. UALINK_SIM_FAULT_REVOKE_ON_EXPORTER_FILE_CLOSE
 * revokes them instead, whoever else holds a GEM handle of the BO.
 */
void usim_file_closed(struct usim_accel *accel, struct drm_file *file)
{
	struct usim_export *exp;
	unsigned long index;

	mutex_lock(&usim_pod.lock);
	xa_for_each(&accel->exports, index, exp) {
		if (exp->file != file)
			continue;
		exp->file = NULL;
		if (usim_fault(UALINK_SIM_FAULT_REVOKE_ON_EXPORTER_FILE_CLOSE))
			usim_export_destroy(exp);
	}
	mutex_unlock(&usim_pod.lock);
}

/*
 * handle_hi as the importer gave it against the exporter's.
 * UALINK_SIM_FAULT_HANDLE_HI_BYTE_IGNORED: bits 40-47 are not compared.
 */
static bool usim_hi_matches(u64 stored, u64 given)
{
	u64 mask = ~0ULL;

	if (usim_fault(UALINK_SIM_FAULT_HANDLE_HI_BYTE_IGNORED))
		mask &= ~GENMASK_ULL(47, 40);
	return !((stored ^ given) & mask);
}

/* Imported objects */

/*
 * The last reference to an imported object went (its last dma-buf, its last
 * GEM handle): so does its import, and with it the exporter's pin. Never
 * under usim_pod.lock with an import left (usim_import_destroy()).
 */
static void usim_remote_free(struct drm_gem_object *obj)
{
	struct usim_remote *remote = to_usim_remote(obj);

	if (READ_ONCE(remote->imp)) {
		mutex_lock(&usim_pod.lock);
		if (remote->imp)
			usim_import_destroy(remote->imp);
		mutex_unlock(&usim_pod.lock);
	}
	drm_gem_object_release(obj);
	kfree(remote);
	atomic64_dec(&usim_pod.remote_objects);
}

/* "Remote NPAs ... cannot be CPU mapped" (v2 documentation). */
/* UALINK_SIM_FAULT_REMOTE_CPU_MAPPABLE: a mapping with no pages behind it. */
static const struct vm_operations_struct usim_remote_vm_ops = {
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

static int usim_remote_mmap(struct drm_gem_object *obj, struct vm_area_struct *vma)
{
	if (!usim_fault(UALINK_SIM_FAULT_REMOTE_CPU_MAPPABLE))
		return -EPERM;
	vma->vm_ops = &usim_remote_vm_ops;
	return 0;
}

/*
 * Remote memory has no pages on this side: nothing to pin, no page list.
 * (Another device reaches it by a dynamic attachment: usim_attach.c.)
 */
int usim_no_pages_pin(struct drm_gem_object *obj)
{
	return -EOPNOTSUPP;
}

struct sg_table *usim_no_pages_sg_table(struct drm_gem_object *obj)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static const struct drm_gem_object_funcs usim_remote_funcs = {
	.free = usim_remote_free,
	.export = usim_remote_export,
	.pin = usim_no_pages_pin,
	.get_sg_table = usim_no_pages_sg_table,
	.mmap = usim_remote_mmap,
};

bool usim_is_remote(struct drm_gem_object *obj)
{
	return obj->funcs == &usim_remote_funcs;
}

/*
 * A reference to the dma-buf an import handed out, while it lives; false
 * once its last user let go of it (its release, which clears it, waits on
 * usim_pod.lock, so its file and memory are still there).
 */
static bool usim_import_get_dmabuf(struct usim_import *imp, struct dma_buf **out)
{
	lockdep_assert_held(&usim_pod.lock);
	if (!imp->dmabuf || !usim_file_get_unless_zero(imp->dmabuf->file))
		return false;
	*out = imp->dmabuf;
	return true;
}

/* Export */

static void usim_new_handle(struct usim_accel *accel, u64 *lo, u64 *hi)
{
	if (usim_fault(UALINK_SIM_FAULT_SEQUENTIAL_HANDLES)) {
		accel->seq++;
		*lo = (accel->seq << AMDGPU_UALINK_HANDLE_ACCID_BITS) | accel->id;
		*hi = accel->seq;
		return;
	}
	/*
	 * Random, the accelerator id in bits 9:0, never 0, unique here.
	 * UALINK_SIM_FAULT_ACCEL_ID_NOT_IN_HANDLE: bits 9:0 random too;
	 * _CONSTANT_HANDLE_HI: one handle_hi for every export.
	 */
	do {
		*lo = get_random_u64();
		if (!usim_fault(UALINK_SIM_FAULT_ACCEL_ID_NOT_IN_HANDLE))
			*lo = (*lo & ~AMDGPU_UALINK_HANDLE_ACCID_MASK_U64) | accel->id;
	} while (!*lo || xa_load(&accel->exports, *lo));
	*hi = get_random_u64();
	if (usim_fault(UALINK_SIM_FAULT_CONSTANT_HANDLE_HI))
		*hi = 0x5eed0000ULL + accel->id;
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

/* Its pages pinned and counted: the handle, indexed. */
static struct usim_export *usim_export_create(struct usim_accel *accel, struct drm_file *file,
					      struct usim_bo *bo)
{
	struct usim_export *exp;
	int ret;

	lockdep_assert_held(&usim_pod.lock);
	exp = kzalloc(sizeof(*exp), GFP_KERNEL);
	if (!exp)
		return ERR_PTR(-ENOMEM);
	exp->accel = accel;
	exp->bo = bo;
	exp->file = file;
	INIT_LIST_HEAD(&exp->importers);
	ret = usim_index_export(accel, exp);
	if (ret) {
		kfree(exp);
		return ERR_PTR(ret);
	}
	drm_gem_object_get(&bo->base.base);
	bo->export = exp;
	usim_pod.exports++;
	return exp;
}

/* Under the pod lock: why @accel cannot export @bo now, or 0. */
static int usim_export_allowed(struct usim_accel *accel, struct usim_bo *bo)
{
	lockdep_assert_held(&usim_pod.lock);
	/*
	 * The ioctl checked accel_state unlocked: if the node went offline
	 * since, its cleanup has run and nothing may be registered after it.
	 */
	if (!usim_accel_active(accel))
		return -EOPNOTSUPP;
	/* Its last handle went while we looked it up, or pinned it. */
	if (!bo->handles)
		return -ENOENT;
	return 0;
}

/* The pod-wide cap on what exports pin: refused, not OOM. */
static int usim_reserve_pinned(u64 npages)
{
	u64 limit = (u64)READ_ONCE(usim_pin_limit_mib) << (20 - PAGE_SHIFT);

	lockdep_assert_held(&usim_pod.lock);
	if (npages > limit || usim_pod.pinned_pages > limit - npages)
		return -ENOSPC;
	usim_pod.pinned_pages += npages;
	return 0;
}

/*
 * A new export of @bo: its pages reserved against the cap under the pod
 * lock and pinned outside it. The pin allocates up to the cap (hundreds of
 * MiB), and every GEM close and handle ioctl of the pod takes that lock.
 * Called and returns with the lock held. Returns the export @bo has then:
 * ours, or the one a racing export of the same BO made first.
 */
static struct usim_export *usim_export_new(struct usim_accel *accel, struct drm_file *file,
					   struct usim_bo *bo)
{
	u64 npages = bo->base.base.size >> PAGE_SHIFT;
	struct usim_export *exp;
	bool pinned, made = false;
	int ret;

	ret = usim_reserve_pinned(npages);
	if (ret)
		return ERR_PTR(ret);
	mutex_unlock(&usim_pod.lock);
	usim_export_pin_hold();
	/* The fabric reaches the pages directly: keep them while exported. */
	ret = drm_gem_shmem_pin(&bo->base);
	pinned = !ret;
	mutex_lock(&usim_pod.lock);
	if (!ret)
		ret = usim_export_allowed(accel, bo);
	exp = ret ? ERR_PTR(ret) : bo->export;
	if (!ret && !exp) {
		exp = usim_export_create(accel, file, bo);
		made = !IS_ERR(exp);
	}
	if (made)
		return exp;
	usim_pod.pinned_pages -= npages;
	if (pinned)
		drm_gem_shmem_unpin(&bo->base);
	return exp;
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

	mutex_lock(&usim_pod.lock);
	ret = usim_export_allowed(accel, bo);
	if (ret)
		goto out_unlock;
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
		exp = usim_export_new(accel, file, bo);
		if (IS_ERR(exp)) {
			ret = PTR_ERR(exp);
			goto out_unlock;
		}
	}
	*lo = exp->lo;
	*hi = exp->hi;
out_unlock:
	mutex_unlock(&usim_pod.lock);
out_put:
	drm_gem_object_put(obj);
	return ret;
}

/* Import */

/* The BO of a revoked handle, when UALINK_SIM_FAULT_LOCAL_IMPORT_REVOKED keeps it. */
static struct drm_gem_object *usim_find_revoked(struct usim_accel *accel, u64 lo, u64 hi)
{
	struct usim_revoked *r;

	lockdep_assert_held(&usim_pod.lock);
	if (!usim_fault(UALINK_SIM_FAULT_LOCAL_IMPORT_REVOKED))
		return NULL;
	r = xa_load(&accel->revoked, lo);
	return r && usim_hi_matches(r->hi, hi) ? r->obj : NULL;
}

/* amdgpu_ualink_local_import(): no NPA, the exporter's own dma-buf. */
static struct dma_buf *usim_local_import(struct usim_accel *accel, struct drm_file *file,
					 u64 lo, u64 hi)
{
	struct drm_gem_object *obj;
	struct usim_export *exp;
	struct dma_buf *dmabuf;

	mutex_lock(&usim_pod.lock);
	exp = xa_load(&accel->exports, lo);
	if (exp && (usim_hi_matches(exp->hi, hi) ||
		    usim_fault(UALINK_SIM_FAULT_LOCAL_LOW_HALF_MATCH)))
		obj = &exp->bo->base.base;
	else
		obj = usim_find_revoked(accel, lo, hi);
	if (!obj) {
		mutex_unlock(&usim_pod.lock);
		return ERR_PTR(-EINVAL);
	}
	drm_gem_object_get(obj);
	mutex_unlock(&usim_pod.lock);

	/* object_name_lock is never taken under usim_pod.lock. */
	/* UALINK_SIM_FAULT_LOCAL_IMPORT_NEW_DMABUF: not the BO's own, a new one. */
	if (usim_fault(UALINK_SIM_FAULT_LOCAL_IMPORT_NEW_DMABUF))
		dmabuf = drm_gem_prime_export(obj, O_RDWR);
	else
		dmabuf = usim_bo_dmabuf(file, obj);
	drm_gem_object_put(obj);
	return dmabuf;
}

/*
 * A refused re-import. UALINK_SIM_FAULT_REFUSED_IMPORT_PINS: it took a pin
 * on the exporter's BO first and its error path forgets it (held until the
 * import goes).
 */
static int usim_refuse_reimport(struct usim_import *imp)
{
	if (usim_fault(UALINK_SIM_FAULT_REFUSED_IMPORT_PINS)) {
		imp->pins++;
		imp->exp->bo->pins++;
		usim_pod.pins++;
	}
	return -EINVAL;
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
		if (!usim_hi_matches(imp->hi, hi) && !usim_fault(UALINK_SIM_FAULT_LOW_HALF_MATCH)) {
			*err = usim_refuse_reimport(imp);
			return NULL;
		}
		return imp;
	}
	return NULL;
}

/*
 * UALINK_SIM_FAULT_NPA_IN_DMABUF_NAME and _NPA_IN_KERNEL_LOG: the NPA shown
 * where user space reads it, the dma-buf's name (fdinfo, readlink of the fd)
 * and the kernel log. Without them it never leaves the kernel.
 */
static void usim_npa_leak_faults(struct usim_accel *accel, struct dma_buf *dmabuf,
				 const struct usim_import *imp)
{
	char *name;

	if (usim_fault(UALINK_SIM_FAULT_NPA_IN_KERNEL_LOG))
		drm_info(&accel->drm, "import of 0x%llx from accelerator %u: npa 0x%llx\n",
			 imp->lo, imp->exporter_id, imp->npa);
	if (!usim_fault(UALINK_SIM_FAULT_NPA_IN_DMABUF_NAME))
		return;
	name = kasprintf(GFP_KERNEL, "npa:0x%llx", imp->npa);
	if (!name)
		return;
	spin_lock(&dmabuf->name_lock);
	kfree(dmabuf->name);
	dmabuf->name = name;
	spin_unlock(&dmabuf->name_lock);
}

/*
 * The NPA-REQ/NPA-RSP exchange with the exporter, done directly: peers of
 * the model share one lock instead of a firmware mailbox.
 */
static struct usim_import *usim_import_create(struct usim_accel *accel, struct usim_accel *peer,
					      u64 lo, u64 hi, int *err, struct dma_buf **out)
{
	struct usim_remote *obj;
	struct usim_import *imp;
	struct usim_export *exp;
	struct dma_buf *dmabuf;
	size_t size;

	/* An offline peer never answers: amdgpu times the request out. */
	if (!usim_accel_active(peer)) {
		*err = usim_fault(UALINK_SIM_FAULT_OFFLINE_EXPORTER_EINVAL) ? -EINVAL : -ETIMEDOUT;
		return NULL;
	}
	exp = xa_load(&peer->exports, lo);
	if (!exp || (!usim_hi_matches(exp->hi, hi) &&
		     !usim_fault(UALINK_SIM_FAULT_FIRST_IMPORT_LOW_HALF))) {
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
	atomic64_inc(&usim_pod.remote_objects);
	dmabuf = usim_remote_export(&obj->base, O_RDWR);
	/*
	 * From here on the dma-buf holds the object; the caller's reference
	 * is the dma-buf's first. UALINK_SIM_FAULT_IMPORT_OUTLIVES_USERS: the
	 * import keeps one of its own.
	 */
	if (!IS_ERR(dmabuf) && usim_fault(UALINK_SIM_FAULT_IMPORT_OUTLIVES_USERS))
		imp->holds_obj = true;
	else
		drm_gem_object_put(&obj->base);
	if (IS_ERR(dmabuf)) {
		kfree(imp);
		*err = PTR_ERR(dmabuf);
		return NULL;
	}
	*out = dmabuf;

	imp->importer = accel;
	imp->exp = exp;
	imp->obj = obj;
	imp->dmabuf = dmabuf;
	imp->lo = lo;
	imp->hi = hi;
	imp->npa = ((u64)peer->id << USIM_NPA_GPUID_SHIFT) | peer->npa_next;
	imp->exporter_id = peer->id;
	imp->size = size;
	peer->npa_next = (peer->npa_next + PAGE_ALIGN(size)) & GENMASK_ULL(40, 0);
	if (peer->npa_next < USIM_NPA_FIRST)
		peer->npa_next = USIM_NPA_FIRST;
	obj->imp = imp;
	obj->npa = imp->npa;
	usim_npa_leak_faults(accel, dmabuf, imp);
	/* "Exported memory is pinned": once per importer, as amdgpu does. */
	if (!usim_fault(UALINK_SIM_FAULT_NO_IMPORT_PIN)) {
		exp->bo->pins++;
		imp->pins = 1;
		usim_pod.pins++;
	}
	list_add_tail(&imp->exp_link, &exp->importers);
	list_add_tail(&imp->imp_link, &accel->imports);
	usim_pod.imports++;
	return imp;
}

/* The caller's reference to the dma-buf to hand out in *out. */
static int usim_import(struct usim_accel *accel, struct drm_file *file, u64 lo, u64 hi,
		       struct dma_buf **out, u64 *npa)
{
	u32 id = lo & AMDGPU_UALINK_HANDLE_ACCID_MASK_U64;
	struct usim_import *imp = NULL;
	struct dma_buf *dmabuf = NULL;
	struct usim_accel *peer;
	int ret = 0;

	*npa = 0;
	if (id >= AMDGPU_UALINK_ACCEL_MAX_IDS)
		return usim_fault(UALINK_SIM_FAULT_ACCEL_ID_RANGE_ENODEV) ? -ENODEV : -EINVAL;

	mutex_lock(&usim_pod.lock);
	peer = id < usim_pod.n ? usim_pod.accel[id] : NULL;
	/* Gone offline since the unlocked check: as in usim_export(). */
	if (!usim_accel_active(accel)) {
		peer = NULL;
		ret = -EOPNOTSUPP;
	} else if (!peer) {
		ret = usim_fault(UALINK_SIM_FAULT_UNKNOWN_PEER_EINVAL) ? -EINVAL : -ENODEV;
	} else if (peer != accel) {
		imp = usim_find_import(accel, lo, hi, &ret);
		/* Its last user is letting go: a new import, a new object. */
		if (imp && !usim_import_get_dmabuf(imp, &dmabuf)) {
			usim_import_destroy(imp);
			imp = NULL;
		}
		if (!imp && !ret)
			imp = usim_import_create(accel, peer, lo, hi, &ret, &dmabuf);
	}
	if (imp)
		*npa = imp->npa;
	mutex_unlock(&usim_pod.lock);

	if (peer == accel) {
		dmabuf = usim_local_import(accel, file, lo, hi);
		if (IS_ERR(dmabuf))
			return PTR_ERR(dmabuf);
	} else if (!imp) {
		return ret;
	}
	*out = dmabuf;
	return 0;
}

/* Whether nonzero flags are refused: by the contract always, on every path. */
static bool usim_flags_checked(struct usim_accel *accel, u32 op, u64 lo)
{
	bool peer_import = op == DRM_AMDGPU_UALINK_HANDLE_OP_IMPORT &&
			   (lo & AMDGPU_UALINK_HANDLE_ACCID_MASK_U64) != accel->id;

	if (usim_fault(UALINK_SIM_FAULT_FLAGS_UNCHECKED))
		return false;
	return !(peer_import && usim_fault(UALINK_SIM_FAULT_PEER_FLAGS_UNCHECKED));
}

/* The ioctl's inputs, latched before any output is written (they alias). */
struct usim_request {
	u32 op;
	u32 flags;
	u32 gem_handle;
	u64 lo;
	u64 hi;
};

static void usim_latch(const union drm_amdgpu_ualink_handle *args, struct usim_request *req)
{
	req->op = args->in.op;
	req->flags = args->in.flags;
	req->gem_handle = args->in.gem_handle;
	req->lo = args->in.import_ualink_handle[0];
	req->hi = args->in.import_ualink_handle[1];
	if (usim_fault(UALINK_SIM_FAULT_GEM_HANDLE_WIDE))
		req->gem_handle = req->lo > U32_MAX ? 0 : req->lo;
	if (usim_fault(UALINK_SIM_FAULT_GEM_HANDLE_LOW16))
		req->gem_handle &= 0xffff;
	if (usim_fault(UALINK_SIM_FAULT_OP_LOW_BYTE))
		req->op &= 0xff;
}

static int usim_handle_export(struct usim_accel *accel, struct drm_file *file,
			      const struct usim_request *req, union drm_amdgpu_ualink_handle *args)
{
	u64 lo, hi;
	int ret;

	ret = usim_export(accel, file, req->gem_handle, &lo, &hi);
	if (!ret) {
		args->out.export_ualink_handle[0] = lo;
		args->out.export_ualink_handle[1] = hi;
	}
	return ret;
}

static int usim_handle_import(struct usim_accel *accel, struct drm_file *file,
			      const struct usim_request *req, union drm_amdgpu_ualink_handle *args)
{
	struct usim_pending_fd *pending;
	struct dma_buf *dmabuf;
	u64 npa;
	int ret, fd;

	/* Only usim_fops reach here, and they always give the slot. */
	pending = usim_pending_find();
	if (WARN_ON_ONCE(!pending || pending->dmabuf))
		return -EINVAL;
	ret = usim_import(accel, file, req->lo, req->hi, &dmabuf, &npa);
	if (ret)
		return ret;
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return fd;
	}
	pending->dmabuf = dmabuf;
	pending->fd = fd;
	args->out.import_dmabuf_handle = fd;
	if (npa && usim_fault(UALINK_SIM_FAULT_NPA_LEAK))
		args->out.export_ualink_handle[1] = npa;
	return 0;
}

static int usim_handle_request(struct usim_accel *accel, struct drm_file *file,
			       const struct usim_request *req, union drm_amdgpu_ualink_handle *args)
{
	/* No flag is defined: refuse them all, so they can get a meaning later. */
	if (req->flags && usim_flags_checked(accel, req->op, req->lo))
		return -EINVAL;
	if (req->op != DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT &&
	    req->op != DRM_AMDGPU_UALINK_HANDLE_OP_IMPORT)
		return -EINVAL;
	if (usim_fault(UALINK_SIM_FAULT_STATE_AFTER_OP) && !usim_accel_active(accel))
		return -EOPNOTSUPP;
	if (req->op == DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT)
		return usim_handle_export(accel, file, req, args);
	return usim_handle_import(accel, file, req, args);
}

/* DRM_IOCTL_AMDGPU_UALINK_HANDLE */
int usim_ualink_handle_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	union drm_amdgpu_ualink_handle *args = data;
	struct usim_accel *accel = to_accel(dev);
	struct usim_request req;
	int ret;

	/* As amdgpu: not an active member of a pod, nothing else is looked at. */
	if (!usim_fault(UALINK_SIM_FAULT_STATE_AFTER_OP) && !usim_accel_active(accel))
		return -EOPNOTSUPP;

	usim_latch(args, &req);
	ret = usim_handle_request(accel, file, &req, args);
	/* drm_ioctl() copies the argument back whatever the result. */
	if (ret && usim_fault(UALINK_SIM_FAULT_OUTPUT_ON_ERROR))
		memset(&args->out, 0, sizeof(args->out));
	return ret;
}

/* Model-only ioctls: the fabric and the pod */

/* Copies between @buf and the exporter's pages, pinned while exported. */
static void usim_fabric_copy(struct usim_bo *bo, u64 offset, void *buf, size_t size, bool write)
{
	while (size) {
		struct page *page = bo->base.pages[offset >> PAGE_SHIFT];
		size_t in_page = offset & ~PAGE_MASK;
		/* UALINK_SIM_FAULT_ACCESS_IGNORES_OFFSET: the page, not the byte. */
		size_t at = usim_fault(UALINK_SIM_FAULT_ACCESS_IGNORES_OFFSET) ? 0 : in_page;
		size_t len = min_t(size_t, size, PAGE_SIZE - in_page);
		void *vaddr = kmap_local_page(page);

		if (write)
			memcpy(vaddr + at, buf, len);
		else
			memcpy(buf, vaddr + at, len);
		kunmap_local(vaddr);
		buf += len;
		offset += len;
		size -= len;
	}
}

int usim_remote_access_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
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
	/* A bounce buffer: no user page fault while usim_pod.lock is held. */
	buf = kvmalloc(args->size, GFP_KERNEL);
	if (!buf) {
		ret = -ENOMEM;
		goto out_put;
	}
	if (write && copy_from_user(buf, user, args->size)) {
		ret = -EFAULT;
		goto out_free;
	}
	mutex_lock(&usim_pod.lock);
	imp = to_usim_remote(obj)->imp;
	if (imp)
		usim_fabric_copy(imp->exp->bo, args->offset, buf, args->size, write);
	else
		ret = -ENOLINK;
	mutex_unlock(&usim_pod.lock);
	if (!ret && !write && copy_to_user(user, buf, args->size))
		ret = -EFAULT;
out_free:
	kvfree(buf);
out_put:
	drm_gem_object_put(obj);
	return ret;
}

int usim_pod_stats_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_ualink_sim_pod_stats *args = data;

	memset(args, 0, sizeof(*args));
	args->accel_id = to_accel(dev)->id;
	mutex_lock(&usim_pod.lock);
	args->accelerators = usim_pod.n;
	args->exports = usim_pod.exports;
	args->imports = usim_pod.imports;
	args->pins = usim_pod.pins;
	args->resets = usim_pod.resets;
	mutex_unlock(&usim_pod.lock);
	args->pinned_bytes = usim_pod.pinned_pages << PAGE_SHIFT;
	args->pin_limit_bytes = (u64)READ_ONCE(usim_pin_limit_mib) << 20;
	args->bos = atomic64_read(&usim_pod.bos);
	args->remote_objects = atomic64_read(&usim_pod.remote_objects);
	return 0;
}
