#!/bin/bash
# vm/kernel-tree.sh on a stub tree: a .config, dummy images and a Makefile
# that answers `kernelrelease` and `modules_install` as a built tree's does.
# Checks its refusals, its layout, its key (a rebuilt tree is a new dir, the
# same tree by another path is not) and that it writes nothing into the
# tree. The kernel's own Makefile is not run here: a real built tree is
# (`pinmatrix vm --kernel tree:DIR`, see docs/kernels.md).
#
# Usage: kernel_tree_test.sh PATH/TO/vm/kernel-tree.sh
set -euo pipefail

script=$1
command -v depmod >/dev/null || PATH=$PATH:/sbin:/usr/sbin
command -v depmod >/dev/null || { echo "SKIP: no depmod"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/pm-kernel-tree-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree=$work/tree
cache=$work/cache

# Also from inside $(...): counted in a file, said on stderr.
fail() { echo "FAIL: $*" >&2; echo "$*" >> "$work/failures"; }

# A tree as `make bzImage modules` leaves it, in the parts the script reads.
make_stub_tree() { # MODULES(y|n)
  rm -rf "$tree"
  mkdir -p "$tree/arch/x86/boot"
  printf 'ELF-ish vmlinux\n' > "$tree/vmlinux"
  printf 'bzImage\n' > "$tree/arch/x86/boot/bzImage"
  printf 'kernel/fs/9p/9p.ko\n' > "$tree/modules.builtin"
  printf 'CONFIG_PVH=y\n' > "$tree/.config"
  if [[ $1 == y ]]; then
    printf 'CONFIG_MODULES=y\n' >> "$tree/.config"
    : > "$tree/Module.symvers"
  else
    printf '# CONFIG_MODULES is not set\n' >> "$tree/.config"
  fi
  # Recipes start with a tab.
  sed 's/^> /\t/' > "$tree/Makefile" <<'EOF'
kernelrelease:
> @echo 6.99.0-stub
modules_install:
> mkdir -p $(INSTALL_MOD_PATH)/lib/modules/6.99.0-stub/kernel
> echo "strip=$(INSTALL_MOD_STRIP)" > $(INSTALL_MOD_PATH)/lib/modules/6.99.0-stub/stub-args
EOF
}

# What the tree holds: each file's path, mtime and size.
tree_listing() { find "$tree" -printf '%p %T@ %s\n' | sort; }

# Runs the script; prints its kernel dir and checks the tree is untouched.
lay_out() { # TREE_PATH
  local before dir
  before=$(tree_listing)
  dir=$("$script" "$1" "$cache" 2> "$work/stderr") || { cat "$work/stderr" >&2; fail "kernel-tree.sh $1 failed"; return 0; }
  [[ $(tree_listing) == "$before" ]] || fail "kernel-tree.sh wrote into the tree"
  echo "$dir"
}

# Refused with MESSAGE, nothing laid out.
expect_refusal() { # MESSAGE TREE_PATH
  local rc=0
  "$script" "$2" "$cache" > /dev/null 2> "$work/stderr" || rc=$?
  ((rc != 0)) || fail "accepted: $2 (expected '$1')"
  grep -qF -- "$1" "$work/stderr" || fail "for $2: expected '$1', got: $(<"$work/stderr")"
  ! compgen -G "$cache/kernels/tree-*" > /dev/null || fail "laid out a refused tree: $2"
}

make_stub_tree n
expect_refusal "is not a directory" "$tree/.config"
expect_refusal "is not a directory" "$work/missing"
mv "$tree/.config" "$work/config"
expect_refusal "is not a kernel build tree (no .config or Makefile)" "$tree"
mv "$work/config" "$tree/.config"
mv "$tree/arch/x86/boot/bzImage" "$work/bzImage"
sed -i '/CONFIG_PVH/d' "$tree/.config"
expect_refusal "has no arch/x86/boot/bzImage: build it first" "$tree"
make_stub_tree y
rm "$tree/Module.symvers"
expect_refusal "has no Module.symvers" "$tree"
make_stub_tree n
sed -i 's/@echo 6.99.0-stub/@echo "make: something else"/' "$tree/Makefile"
expect_refusal "make kernelrelease in $tree gave 'make: something else'" "$tree"

# Layout, without CONFIG_MODULES: no modules but the built-in list.
make_stub_tree n
dir=$(lay_out "$tree")
real=$(realpath "$tree")
[[ -n $dir && $dir == "$cache/kernels/tree-"* ]] || fail "kernel dir '$dir' is not under $cache/kernels/tree-"
for f in vmlinux vmlinuz release config kdir source modules/modules.dep modules/modules.builtin; do
  [[ -f $dir/$f ]] || fail "no $f in $dir"
done
[[ $(cat "$dir/release") == 6.99.0-stub ]] || fail "release: $(cat "$dir/release")"
[[ $(cat "$dir/kdir") == "$real" ]] || fail "kdir: $(cat "$dir/kdir"), not $real"
[[ $(readlink "$dir/modules/build") == "$real" ]] || fail "modules/build -> $(readlink "$dir/modules/build")"
[[ $(cat "$dir/.complete") == "layout 2" ]] || fail ".complete: $(cat "$dir/.complete")"
cmp -s "$dir/vmlinuz" "$tree/arch/x86/boot/bzImage" || fail "vmlinuz is not the tree's bzImage"

# The key: the same tree (by any path) is the same dir; a rebuilt image or
# another .config a new one.
ln -s "$tree" "$work/tree-link"
[[ $(lay_out "$work/tree-link") == "$dir" ]] || fail "the same tree by a link is another dir"
[[ $(lay_out "$tree") == "$dir" ]] || fail "a second run is another dir"
touch -d '+1 minute' "$tree/vmlinux"
rebuilt=$(lay_out "$tree")
[[ -n $rebuilt && $rebuilt != "$dir" ]] || fail "a rebuilt vmlinux kept dir $dir"
echo 'CONFIG_CMA=y' >> "$tree/.config"
reconfigured=$(lay_out "$tree")
[[ -n $reconfigured && $reconfigured != "$rebuilt" ]] || fail "another .config kept dir $rebuilt"

# Without CONFIG_PVH there is no vmlinux to boot: vmlinuz only.
sed -i '/CONFIG_PVH/d' "$tree/.config"
dir=$(lay_out "$tree")
[[ -n $dir && ! -e $dir/vmlinux && -f $dir/vmlinuz ]] || fail "without CONFIG_PVH: vmlinux laid out, or no vmlinuz"

# With CONFIG_MODULES: modules_install into the cache, stripped.
make_stub_tree y
dir=$(lay_out "$tree")
[[ -n $dir && $(cat "$dir/modules/stub-args" 2>/dev/null) == strip=1 ]] ||
  fail "modules_install did not run with INSTALL_MOD_PATH in the cache and INSTALL_MOD_STRIP=1"
[[ -f $dir/modules/modules.dep ]] || fail "no modules.dep with CONFIG_MODULES"

if [[ -s $work/failures ]]; then
  echo "$(wc -l < "$work/failures") failure(s)"
  exit 1
fi
echo "kernel-tree.sh: refusals, layout, key and an untouched tree: ok"
