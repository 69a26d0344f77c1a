"""scripts/device/ab_table.py, the tables of ab_steps.sh, on a log written the way ab_steps.sh
writes it: medians over reps per binary, changes against the first binary, a binary whose run
failed shown as missing, other output ignored; and the step breakdowns' kernels, each binary's
launches and median us per launch (negative ones kept), a kernel a binary lacks shown as missing."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "device", "ab_table.py")

LOG = """== base rep 1
device: NVIDIA H200 (132 SMs, L2 60 MB)
Decode step, random weights, context 512 per request, split_kv attention
model          batch |   eager ms   graph ms
Llama-3.2-1B       1 |      0.979      0.900
  where the graph replay of Llama-3.2-1B's batch-1 step goes (900.1 us; each kernel's time added to the
  chain, from replays of its prefixes; the first kernel's includes the graph launch):
  kernel                                                           launches        us   us each  share
  split_kv_kernel<64>                                                    16     137.0      8.56  14.8%
  rope_cache_kernel                                                      16      16.0      1.00   1.8%
Llama-3.1-8B       1 |      4.268      4.000
== variant rep 1
Llama-3.2-1B       1 |      0.975      0.990
  where the graph replay of Llama-3.2-1B's batch-1 step goes (990.0 us; each kernel's time added to the
  split_kv_kernel<64>                                                    16     160.0     10.00  16.2%   166
  rope_cache_kernel                                                      16     -16.0     -1.00  -1.6%    58
Llama-3.1-8B       1 |      4.290      3.900
== broken rep 1
ab_steps.sh: broken failed (exit 1)
== base rep 2
Llama-3.2-1B       1 |      0.977      0.910
  where the graph replay of Llama-3.2-1B's batch-1 step goes (910.0 us; each kernel's time added to the
  split_kv_kernel<64>                                                    16     140.0      8.75  15.4%
  rope_cache_kernel                                                      16      18.0      1.12   2.0%
Llama-3.1-8B       1 |      4.284      4.010
== variant rep 2
Llama-3.2-1B       1 |      0.981      0.980
Llama-3.1-8B       1 |      4.292      3.910
== base rep 3
Llama-3.2-1B       1 |      0.977      0.950
Llama-3.1-8B       1 |      4.284      4.020
"""


def main():
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(LOG)
        path = f.name
    try:
        proc = subprocess.run([sys.executable, SCRIPT, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              check=False, text=True)
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        sys.exit("ab_table.py failed: " + proc.stderr)
    steps, _, breakdown = proc.stdout.partition("\nus per launch in Llama-3.2-1B's batch-1 step")
    rows = {line.split("|")[0].split()[0] + " " + line.split("|")[0].split()[1]: line.split("|")[1].split()
            for line in steps.splitlines() if line.startswith("Llama")}
    # base: median of 0.900, 0.910, 0.950 = 0.910; variant: median of 0.990, 0.980 = 0.985 -> +8.2%.
    expected = {
        "Llama-3.2-1B 1": ["0.910", "0.985", "+8.2%", "-"],
        "Llama-3.1-8B 1": ["4.010", "3.905", "-2.6%", "-"],
    }
    if rows != expected:
        sys.exit(f"ab_table.py printed\n{proc.stdout}\nexpected the rows {expected}")
    header = [line for line in proc.stdout.splitlines() if line.startswith("model")]
    if header != [header[0]] or header[0].split()[-3:] != ["base", "variant", "broken"]:
        sys.exit(f"ab_table.py's header is wrong:\n{proc.stdout}")
    # The breakdown: base's split_kv over reps 1-2 (8.56, 8.75: median 8.655, printed 8.65 or 8.66),
    # variant's one rep with its registers (a newer log's column); rope_cache in base, and in variant
    # with a negative share (kept: a kernel that overlaps the next one). Lines outside a breakdown
    # are not kernels.
    kernels = {line.split("|")[0].strip(): " ".join(line.split("|")[1].split())
               for line in breakdown.splitlines()[2:] if "|" in line}
    expected_kernels = {"split_kv_kernel<64>": ["16 x 8.65 16 x 10.00 r166 -", "16 x 8.66 16 x 10.00 r166 -"],
                        "rope_cache_kernel": ["16 x 1.06 16 x -1.00 r58 -"]}
    if set(kernels) != set(expected_kernels) or any(kernels[k] not in v for k, v in expected_kernels.items()):
        sys.exit(f"ab_table.py's breakdown table is wrong:\n{proc.stdout}\nexpected {expected_kernels}")
    print("ab_table.py: medians, changes, a failed binary and the breakdown table as expected")


if __name__ == "__main__":
    main()
