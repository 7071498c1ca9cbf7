#!/usr/bin/env bash
# One line a second of what the machine and PostgreSQL did in that second, to set beside the
# per-second rate `outside` prints: CPU stolen by the hypervisor and busy (/proc/stat), the
# kernel's dirty and under-writeback page cache (/proc/meminfo), what the disk wrote
# (/proc/diskstats), how long tasks stalled on I/O (/proc/pressure/io), and the WAL PostgreSQL
# wrote, its full-page images, and checkpoints begun (pg_stat_wal, pg_stat_bgwriter).
#   bench/monitor.sh [disk] > monitor.log &      # disk: the device under PostgreSQL (vda)
set -u
DISK=${1:-$(lsblk -dno NAME,TYPE | awk '$2 == "disk" && $1 !~ /^(zram|loop)/ {print $1; exit}')}
PSQL=(psql "${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}" -Atqc)

stat_cpu() { head -1 /proc/stat; }
disk() { awk -v d="$DISK" '$3 == d {print $8, $10}' /proc/diskstats; }
stalled() { awk '{split($5, a, "="); printf "%s ", a[2]} END {print ""}' /proc/pressure/io 2>/dev/null || echo "0 0"; }
pg() {
    "${PSQL[@]}" "SELECT w.wal_bytes::bigint, w.wal_fpi, b.checkpoints_timed + b.checkpoints_req
                    FROM pg_stat_wal w, pg_stat_bgwriter b" 2>/dev/null | tr '|' ' ' || echo "0 0 0"
}
meminfo() { awk '/^Dirty:/ {d = $2} /^Writeback:/ {w = $2} END {print int(d / 1024), int(w / 1024)}' /proc/meminfo; }

read -ra c0 <<<"$(stat_cpu)"; read -ra d0 <<<"$(disk)"; read -ra s0 <<<"$(stalled)"; read -ra p0 <<<"$(pg)"
echo "time steal% busy% dirtyMB writebackMB diskMB/s diskwrites/s io_some_ms io_full_ms walMB/s fpi/s checkpoints"
while sleep 1; do
    read -ra c1 <<<"$(stat_cpu)"; read -ra d1 <<<"$(disk)"; read -ra s1 <<<"$(stalled)"; read -ra p1 <<<"$(pg)"
    total=0
    for i in 1 2 3 4 5 6 7 8; do total=$((total + c1[i] - c0[i])); done
    ((total > 0)) || total=1
    busy=$((c1[1] - c0[1] + c1[2] - c0[2] + c1[3] - c0[3] + c1[6] - c0[6] + c1[7] - c0[7]))
    printf '%s %d %d %s %d %d %d %d %d %d %d\n' "$(date +%T)" \
        $((100 * (c1[8] - c0[8]) / total)) $((100 * busy / total)) "$(meminfo)" \
        $(((d1[1] - d0[1]) / 2048)) $((d1[0] - d0[0])) \
        $(((s1[0] - s0[0]) / 1000)) $(((s1[1] - s0[1]) / 1000)) \
        $(((p1[0] - p0[0]) / 1048576)) $((p1[1] - p0[1])) $((p1[2] - p0[2]))
    c0=("${c1[@]}"); d0=("${d1[@]}"); s0=("${s1[@]}"); p0=("${p1[@]}")
done
