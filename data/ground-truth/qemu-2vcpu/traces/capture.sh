#!/bin/bash
# Records an ftrace of rt-tests `hackbench -T -p -g 2 -l 100` (hb_thr_pipe), or of the
# ground truth's pp (pp.c here: 5000 one-token round trips between two processes), in a real
# kernel booted under qemu TCG with 2 vCPUs, as the ground truth of this directory was measured.
#
#   capture.sh VMLINUZ OUT.txt [sched|sys] [hb_thr_pipe|pp|fair_3on2]
#
# VMLINUZ: a kernel image, e.g. the `vmlinuz` of linux-image-6.12.117+deb13-amd64 or of
# linux-binary-7.3.4+deb13-amd64 (`apt-get download`, `dpkg-deb -x`). Needs qemu-system-x86,
# busybox-static and rt-tests on the host. `sched` (default) traces sched_switch, sched_waking,
# sched_wakeup, sched_migrate_task, hrtimer_start/hrtimer_expire_entry and the local-timer and
# reschedule IRQ vectors; `sys` adds the read/write syscall events (slower: ~40 MB of text).
# pp and fair_3on2 (hogs.c: three busy loops for 2 s) also trace the call-function IPI (`call_function_single_entry`: remote wakeups and NOHZ
# kicks) and `sched_wake_idle_without_ipi`, and needs gcc and a static libc (libc6-dev).
# One untraced warm-up run precedes the traced one. The trace leaves the guest gzipped and
# base64-encoded on a second serial port. Trace events are enabled with vCPU 1 offline (the
# text-patching method of README.md).
set -euo pipefail
kernel=${1:?usage: capture.sh VMLINUZ OUT.txt [sched|sys]}
out=${2:?usage: capture.sh VMLINUZ OUT.txt [sched|sys]}
mode=${3:-sched}
workload=${4:-hb_thr_pipe}
case $workload in
  hb_thr_pipe) bench='hackbench -T -p -g 2 -l 100'; extra='' ;;
  pp) bench='pp 5000'; extra='irq_vectors/call_function_single_entry sched/sched_wake_idle_without_ipi' ;;
  fair_3on2) bench='hogs 3 2'; extra='irq_vectors/call_function_single_entry sched/sched_wake_idle_without_ipi' ;;
  *) echo "capture.sh: unknown workload $workload (hb_thr_pipe, pp or fair_3on2)" >&2; exit 2 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,proc,sys,dev,tmp}
cp /usr/bin/busybox "$root/bin/"
for a in sh mount cat echo gzip base64 sed grep wc poweroff; do ln -s busybox "$root/bin/$a"; done
if [ "$workload" = pp ]; then
  gcc -O2 -static -o "$root/bin/pp" "$(dirname "$0")/pp.c"
elif [ "$workload" = fair_3on2 ]; then
  gcc -O2 -static -o "$root/bin/hogs" "$(dirname "$0")/hogs.c"
else
  cp /usr/bin/hackbench "$root/bin/"
  # hackbench's shared libraries and loader, at their host paths.
  for lib in $(ldd /usr/bin/hackbench | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    cp "$lib" "$root$lib"
  done
fi
cat > "$root/init" <<'INIT'
#!/bin/busybox sh
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
T=/sys/kernel/debug/tracing
[ -d $T/events ] || mount -t tracefs tracefs $T
C=/sys/devices/system/cpu
MODE=$(sed -n 's/.*capture=\([a-z]*\).*/\1/p' /proc/cmdline)
BENCH="@BENCH@"
EXTRA="@EXTRA@"
echo "@@ release $(uname -r)"
echo "@@ features $(cat /sys/kernel/debug/sched/features)"
$BENCH
echo 65536 > $T/buffer_size_kb
echo 0 > $C/cpu1/online
for e in sched/sched_switch sched/sched_wakeup sched/sched_waking sched/sched_migrate_task \
         timer/hrtimer_expire_entry timer/hrtimer_start irq_vectors/local_timer_entry \
         irq_vectors/reschedule_entry $EXTRA; do
  echo 1 > $T/events/$e/enable
done
if [ "$MODE" = sys ]; then
  for e in sys_enter_read sys_exit_read sys_enter_write sys_exit_write; do
    echo 1 > $T/events/syscalls/$e/enable
  done
fi
echo 1 > $C/cpu1/online
echo > $T/trace
echo 1 > $T/tracing_on
$BENCH
echo 0 > $T/tracing_on
echo "@@ overruns $(grep -h '^overrun' $T/per_cpu/cpu*/stats | tr '\n' ' ')"
gzip -c $T/trace | base64 > /dev/ttyS1
echo "@@ done"
poweroff -f
INIT
sed -i -e "s|@BENCH@|$bench|" -e "s|@EXTRA@|$extra|" "$root/init"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip > "$work/initrd.gz")
qemu-system-x86_64 -accel tcg,thread=multi -smp 2 -m 1024M -nographic -nic none -no-reboot \
  -kernel "$kernel" -initrd "$work/initrd.gz" \
  -append "console=ttyS0 quiet panic=-1 schedstats=enable tsc=reliable no_timer_check capture=$mode" \
  -serial mon:stdio -serial "file:$work/trace.b64" | tr -d '\r' | grep -a -e '^@@' -e '^Time:' -e '^pp:' || true
tr -d '\r' < "$work/trace.b64" | base64 -d | gunzip > "$out"
echo "wrote $out ($(grep -c sched_switch: "$out") sched_switch events)"
