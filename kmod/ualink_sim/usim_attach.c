// SPDX-License-Identifier: GPL-2.0
/*
 * ualink_sim: an imported object's dma-buf, as the v2 documentation has it
 * ("The dma-buf is leveraged for dynamic attachment which provides the
 * ability to revoke access when necessary"). The exporter side: its
 * operations, a release that tells the import its dma-buf is going, dynamic
 * attachment only (a static attachment could not be revoked), a mapping of
 * the NPA range, and the revoke notice to every dynamic importer when the
 * import goes. The importer side: another accelerator's PRIME import of
 * that dma-buf, a dynamic attachment that unmaps at the notice.
 */

#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include <drm/drm_gem.h>
#include <drm/drm_prime.h>

#include "ualink_sim.h"
#include "usim_drv.h"

/* A reference to a file unless its count already reached zero. */
bool usim_file_get_unless_zero(struct file *file)
{
#ifdef PM_HAVE_GET_FILE_ACTIVE
	return get_file_active(&file);
#else
	return get_file_rcu(file);
#endif
}

/* Exporter side: the imported object's dma-buf */

/* The import no longer hands out a dma-buf on its way to release. */
static void usim_remote_dmabuf_release(struct dma_buf *dmabuf)
{
	struct usim_import *imp;

	mutex_lock(&usim_pod.lock);
	imp = to_usim_remote(dmabuf->priv)->imp;
	if (imp && imp->dmabuf == dmabuf)
		imp->dmabuf = NULL;
	mutex_unlock(&usim_pod.lock);
	drm_gem_dmabuf_release(dmabuf);
}

/*
 * Only a dynamic importer, one that can be told of a revoke: it has
 * importer operations (dma_buf_attachment_is_dynamic(), which 7.x dropped).
 */
static int usim_remote_attach(struct dma_buf *dmabuf, struct dma_buf_attachment *attach)
{
	if (!attach->importer_ops || !attach->peer2peer)
		return -EOPNOTSUPP;
	return 0;
}

/*
 * Kernels without CONFIG_DMABUF_MOVE_NOTIFY pin a dynamic exporter's buffer
 * while it is mapped: the memory behind an import is pinned already, by
 * its export ("Exported memory is pinned"), so there is nothing to do.
 */
static int usim_remote_pin(struct dma_buf_attachment *attach)
{
	return 0;
}

static void usim_remote_unpin(struct dma_buf_attachment *attach)
{
}

/*
 * The NPA range as the importer's device would reach it: one segment, no
 * pages on this side. Refused once access is revoked.
 */
static struct sg_table *usim_remote_map(struct dma_buf_attachment *attach,
					enum dma_data_direction dir)
{
	struct usim_remote *remote = to_usim_remote(attach->dmabuf->priv);
	struct sg_table *sgt;
	int ret;

	dma_resv_assert_held(attach->dmabuf->resv);
	if (!READ_ONCE(remote->imp))
		return ERR_PTR(-ENOLINK);
	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(sgt, 1, GFP_KERNEL);
	if (ret) {
		kfree(sgt);
		return ERR_PTR(ret);
	}
	sg_dma_address(sgt->sgl) = remote->npa;
	sg_dma_len(sgt->sgl) = remote->base.size;
	atomic_inc(&remote->mapped);
	return sgt;
}

static void usim_remote_unmap(struct dma_buf_attachment *attach, struct sg_table *sgt,
			      enum dma_data_direction dir)
{
	atomic_dec(&to_usim_remote(attach->dmabuf->priv)->mapped);
	sg_free_table(sgt);
	kfree(sgt);
}

/* DRM's PRIME operations, less its attach and mapping of pages. */
static const struct dma_buf_ops usim_remote_dmabuf_ops = {
	.attach = usim_remote_attach,
	.pin = usim_remote_pin,
	.unpin = usim_remote_unpin,
	.map_dma_buf = usim_remote_map,
	.unmap_dma_buf = usim_remote_unmap,
	.release = usim_remote_dmabuf_release,
	.mmap = drm_gem_dmabuf_mmap,
	.vmap = drm_gem_dmabuf_vmap,
	.vunmap = drm_gem_dmabuf_vunmap,
};

/* Every dma-buf of an imported object: the import's, and PRIME export's. */
struct dma_buf *usim_remote_export(struct drm_gem_object *obj, int flags)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);

	exp_info.exp_name = UALINK_SIM_DRIVER_NAME;
	exp_info.owner = THIS_MODULE;
	exp_info.ops = &usim_remote_dmabuf_ops;
	exp_info.size = obj->size;
	exp_info.flags = flags;
	exp_info.priv = obj;
	exp_info.resv = obj->resv;
	return drm_gem_dmabuf_export(obj->dev, &exp_info);
}

/* The revoke notice, from a work item: under usim_pod.lock no reservation
 * lock nor a dma-buf's last reference may be taken.
 */
struct usim_revoke_notice {
	struct work_struct work;
	struct dma_buf *dmabuf;		/* a reference */
};

static void usim_revoke_notice_fn(struct work_struct *work)
{
	struct usim_revoke_notice *n = container_of(work, struct usim_revoke_notice, work);

	dma_resv_lock(n->dmabuf->resv, NULL);
#ifdef PM_HAVE_DMA_BUF_INVALIDATE_MAPPINGS
	dma_buf_invalidate_mappings(n->dmabuf);
#else
	dma_buf_move_notify(n->dmabuf);
#endif
	dma_resv_unlock(n->dmabuf->resv);
	dma_buf_put(n->dmabuf);
	kfree(n);
}

/*
 * An import goes (revoked, its node lost, its last user gone): every dynamic
 * importer of its dma-buf, while it lives, is told to unmap. Under
 * usim_pod.lock. UALINK_SIM_FAULT_NO_REVOKE_NOTICE: no one is told.
 */
void usim_remote_revoke_mappings(struct usim_import *imp)
{
	struct usim_revoke_notice *n;

	lockdep_assert_held(&usim_pod.lock);
	if (!imp->dmabuf || usim_fault(UALINK_SIM_FAULT_NO_REVOKE_NOTICE))
		return;
	n = kzalloc(sizeof(*n), GFP_KERNEL);
	if (!n)
		return;
	if (!usim_file_get_unless_zero(imp->dmabuf->file)) {
		kfree(n);
		return;
	}
	n->dmabuf = imp->dmabuf;
	INIT_WORK(&n->work, usim_revoke_notice_fn);
	queue_work(usim_pod.wq, &n->work);
}

/* Importer side: another accelerator's attachment */

/* Another accelerator's object for an imported object's dma-buf. */
struct usim_attached {
	struct drm_gem_object base;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;		/* while mapped; under the reservation lock */
	u32 notices;			/* revoke notices received; the same */
};

static inline struct usim_attached *to_usim_attached(struct drm_gem_object *obj)
{
	return container_of(obj, struct usim_attached, base);
}

/* The revoke notice: unmap, under the dma-buf's reservation lock. */
static void usim_attached_invalidate(struct dma_buf_attachment *attach)
{
	struct usim_attached *a = attach->importer_priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	a->notices++;
	if (a->sgt) {
		dma_buf_unmap_attachment(attach, a->sgt, DMA_BIDIRECTIONAL);
		a->sgt = NULL;
	}
}

static const struct dma_buf_attach_ops usim_attach_ops = {
	.allow_peer2peer = true,
#ifdef PM_HAVE_DMA_BUF_INVALIDATE_MAPPINGS
	.invalidate_mappings = usim_attached_invalidate,
#else
	.move_notify = usim_attached_invalidate,
#endif
};

static void usim_attached_free(struct drm_gem_object *obj)
{
	struct usim_attached *a = to_usim_attached(obj);
	struct dma_buf *dmabuf = a->attach->dmabuf;

	dma_resv_lock(dmabuf->resv, NULL);
	if (a->sgt)
		dma_buf_unmap_attachment(a->attach, a->sgt, DMA_BIDIRECTIONAL);
	dma_resv_unlock(dmabuf->resv);
	dma_buf_detach(dmabuf, a->attach);
	dma_buf_put(dmabuf);
	drm_gem_object_release(obj);
	kfree(a);
}

/* Remote memory through a remote memory: no CPU view, no pages, no export. */
static int usim_attached_mmap(struct drm_gem_object *obj, struct vm_area_struct *vma)
{
	return -EPERM;
}

static const struct drm_gem_object_funcs usim_attached_funcs = {
	.free = usim_attached_free,
	.pin = usim_no_pages_pin,
	.get_sg_table = usim_no_pages_sg_table,
	.mmap = usim_attached_mmap,
};

bool usim_is_attached(struct drm_gem_object *obj)
{
	return obj->funcs == &usim_attached_funcs;
}

/* Whether the attachment is mapped, and the revoke notices it was sent. */
void usim_attached_state(struct drm_gem_object *obj, bool *mapped, u32 *notices)
{
	struct usim_attached *a = to_usim_attached(obj);

	dma_resv_lock(a->attach->dmabuf->resv, NULL);
	*mapped = a->sgt;
	*notices = a->notices;
	dma_resv_unlock(a->attach->dmabuf->resv);
}

/* A dynamic attachment of an imported object's dma-buf, mapped at once. */
static struct drm_gem_object *usim_attached_import(struct drm_device *dev, struct dma_buf *dmabuf)
{
	struct dma_buf_attachment *attach;
	struct usim_attached *a;
	struct sg_table *sgt;
	int ret;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return ERR_PTR(-ENOMEM);
	a->base.funcs = &usim_attached_funcs;
	drm_gem_private_object_init(dev, &a->base, dmabuf->size);
	get_dma_buf(dmabuf);
	attach = dma_buf_dynamic_attach(dmabuf, dev->dev, &usim_attach_ops, a);
	if (IS_ERR(attach)) {
		ret = PTR_ERR(attach);
		goto err_put;
	}
	dma_resv_lock(dmabuf->resv, NULL);
	sgt = dma_buf_map_attachment(attach, DMA_BIDIRECTIONAL);
	if (!IS_ERR(sgt))
		a->sgt = sgt;
	dma_resv_unlock(dmabuf->resv);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		goto err_detach;
	}
	a->attach = attach;
	a->base.import_attach = attach;
	return &a->base;

err_detach:
	dma_buf_detach(dmabuf, attach);
err_put:
	dma_buf_put(dmabuf);
	drm_gem_object_release(&a->base);
	kfree(a);
	return ERR_PTR(ret);
}

/*
 * PRIME import: an imported object's own dma-buf on its own device is that
 * object again (drm_gem_prime_import() knows only DRM's operations); on
 * another accelerator, a dynamic attachment of it.
 */
struct drm_gem_object *usim_gem_prime_import(struct drm_device *dev, struct dma_buf *dmabuf)
{
	struct drm_gem_object *obj = dmabuf->priv;

	if (dmabuf->ops != &usim_remote_dmabuf_ops)
		return drm_gem_prime_import(dev, dmabuf);
	if (obj->dev != dev)
		return usim_attached_import(dev, dmabuf);
	drm_gem_object_get(obj);
	return obj;
}
