#!/usr/bin/env python3
"""Keeps the README, the manual (docs/) and ARCHITECTURE.md honest.

  check_docs.py links REPO              every relative link and anchor resolves
  check_docs.py options REPO MTRAIN     every flag `mtrain --help` names is in docs/
  check_docs.py architecture REPO       every source file is named in ARCHITECTURE.md
  check_docs.py run REPO BUILD [PAGE]   the blocks marked runnable run, and give
                                        the output their pages show

A block is marked by an HTML comment on the line before its fence:

  <!-- doctest: run [args="--steps 20"] [fixture=NAME] [timeout=S] -->
      each command of the block runs (bash, in one scratch folder per page,
      blocks in page order, so a block may use what one above it made);
      args are appended to each training command (mpirun ... build/mtrain
      without a subcommand): the same command on small data. A leading
      "jobs/setup.sh && " is dropped: the test command has just run it.
  <!-- doctest: output -->
      the output of the run block above it (stdout and stderr): "..." lines
      stand for any lines; figures that vary between runs (samples/s, times,
      host names) are compared as placeholders, and the start line's
      "; dense: ..." (the CPU's kernels) is left out.
  <!-- doctest: shown-by=TEST -->
      a command the suite cannot run here (a Slurm cluster) that the test
      TEST runs: the test must exist and its script must run the command's
      program and files.

Exit status 0 when all is well, 1 with one line per finding otherwise.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile
import zlib
import struct

MARK = re.compile(r'^<!--\s*doctest:\s*(.*?)\s*-->\s*$')
FENCE = re.compile(r'^(```+|~~~+)(.*)$')
LINK = re.compile(r'!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
SOURCE_DIRS = ('base', 'api', 'cuda', 'mpi', 'io', 'src', 'bench')
SOURCE_EXT = ('.c', '.h', '.cu', '.in')
SUBCOMMANDS = ('import', 'export', 'inspect', 'eval', 'preview', 'train')

findings = []


def finding(where, what):
    findings.append('%s: %s' % (where, what))


def pages(repo):
    """The Markdown files of the repository, README first."""
    out = ['README.md', 'ARCHITECTURE.md']
    for d in ('docs', 'cuda'):
        for name in sorted(os.listdir(os.path.join(repo, d))):
            if name.endswith('.md'):
                out.append(os.path.join(d, name))
    return [p for p in out if os.path.exists(os.path.join(repo, p))]


def read(repo, page):
    with open(os.path.join(repo, page), encoding='utf-8') as f:
        return f.read().split('\n')


def prose(lines):
    """(line number, text) of the lines outside fenced blocks."""
    fence = None
    for i, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if m and (fence is None or line.startswith(fence)):
            fence = None if fence else m.group(1)
            continue
        if fence is None:
            yield i, line


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped,
    blanks to hyphens."""
    text = re.sub(r'[`*_]', '', heading.strip().lower())
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)
    text = re.sub(r'[^\w\- ]', '', text)
    return text.replace(' ', '-')


def anchors(lines):
    seen = {}
    out = set()
    for _, line in prose(lines):
        m = re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
        if not m:
            continue
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else '%s-%d' % (s, n))
    return out


def check_links(repo):
    cache = {}
    for page in pages(repo):
        lines = read(repo, page)
        for n, line in prose(lines):
            for target in LINK.findall(re.sub(r'`[^`]*`', '', line)):
                if re.match(r'^[a-z]+:', target):
                    continue  # http:, mailto:: not ours to check here
                path, _, anchor = target.partition('#')
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                where = '%s:%d' % (page, n)
                if not os.path.exists(os.path.join(repo, dest)):
                    finding(where, 'link to %s: no such file' % target)
                    continue
                if anchor and dest.endswith('.md'):
                    if dest not in cache:
                        cache[dest] = anchors(read(repo, dest))
                    if anchor not in cache[dest]:
                        finding(where, 'link to %s: %s has no heading #%s' % (target, dest, anchor))


def check_options(repo, mtrain):
    text = subprocess.run([mtrain, '--help'], capture_output=True, text=True).stdout
    flags = sorted(set(re.findall(r'(?<![\w-])(--[a-z][a-z0-9-]*)', text)))
    if len(flags) < 20:
        finding(mtrain, '--help names only %d flags: is it the right program?' % len(flags))
    manual = ''
    for page in pages(repo):
        if page.startswith('docs/'):
            manual += '\n'.join(read(repo, page))
    for flag in flags:
        if not re.search(re.escape(flag) + r'(?![a-z0-9-])', manual):
            finding('docs/', '%s (in mtrain --help) is not in the manual' % flag)


def tracked_sources(repo):
    try:
        out = subprocess.run(['git', '-C', repo, 'ls-files'], capture_output=True, text=True,
                             check=True).stdout.split('\n')
    except (OSError, subprocess.CalledProcessError):
        out = [os.path.relpath(os.path.join(d, f), repo) for d, _, fs in os.walk(repo)
               for f in fs]
    return sorted(p for p in out if p.split('/')[0] in SOURCE_DIRS and p.endswith(SOURCE_EXT))


def check_architecture(repo):
    text = '\n'.join(read(repo, 'ARCHITECTURE.md'))
    def named(folder, name):  # as "folder/file" or, in its folder's table, the bare file
        return re.search(r'`(%s/)?%s`' % (re.escape(folder), re.escape(name)), text)
    for path in tracked_sources(repo):
        folder, name = os.path.split(path)
        stem, ext = os.path.splitext(name)
        # a module's header goes with its .c (or .cu): "`loader.c`" names both
        if not named(folder, name) and not (ext == '.h' and any(
                named(folder, stem + e) for e in ('.c', '.cu'))):
            finding('ARCHITECTURE.md', '%s is not named' % path)


# ---- runnable blocks ----

def blocks(lines):
    """(line, marks, kind of fence, body lines) of each block after a mark."""
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            f = FENCE.match(lines[j]) if j < len(lines) else None
            if not f:
                yield i + 1, m.group(1), None, []
                i = j
                continue
            k = j + 1
            while k < len(lines) and not lines[k].startswith(f.group(1)):
                k += 1
            yield i + 1, m.group(1), f.group(2).strip(), lines[j + 1:k]
            i = k
        i += 1


def marks(text):
    words = shlex.split(text)
    out = {'kind': words[0] if words else ''}
    for w in words:
        if '=' in w:
            k, v = w.split('=', 1)
            out[k] = v
    if out['kind'].startswith('shown-by'):
        out['kind'] = 'shown-by'
    return out


def commands(body):
    """The block's commands: comments dropped, continued lines joined."""
    out, cur = [], ''
    for line in body:
        if not cur and (not line.strip() or line.lstrip().startswith('#')):
            continue
        cur += line.rstrip()
        if cur.endswith('\\'):
            cur = cur[:-1] + ' '
            continue
        out.append(cur.strip())
        cur = ''
    return out


def small(cmd, args):
    """cmd with args appended when it trains (mpirun, no subcommand)."""
    if not args:
        return cmd
    words = shlex.split(cmd)
    if 'mpirun' not in words:
        return cmd
    at = [i for i, w in enumerate(words) if w.endswith('build/mtrain')]
    if not at or (at[0] + 1 < len(words) and words[at[0] + 1] in SUBCOMMANDS[:-1]):
        return cmd
    return cmd + ' ' + args


def png(path, w, h, rgb):
    """A w x h PNG of one colour with a lighter square, written with zlib."""
    rows = b''
    for y in range(h):
        row = bytearray(b'\0')
        for x in range(w):
            inside = w // 4 <= x < 3 * w // 4 and h // 4 <= y < 3 * h // 4
            row += bytes(min(255, c + (90 if inside else 0)) for c in rgb)
        rows += bytes(row)

    def chunk(kind, data):
        return (struct.pack('>I', len(data)) + kind + data +
                struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff))
    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) +
                chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b''))


def fixture(name, work):
    if name == 'image_folder':  # photos/CLASS/*.png, two classes of 40x40 and 48x40
        for k, (cls, rgb) in enumerate((('cat', (200, 60, 40)), ('dog', (40, 70, 190)))):
            os.makedirs(os.path.join(work, 'photos', cls), exist_ok=True)
            for i in range(80):
                png(os.path.join(work, 'photos', cls, '%03d.png' % i), 40 + 8 * (i % 2), 40,
                    tuple(max(0, c - 3 * i) for c in rgb))
    elif name == 'fashion_idx':  # Debian's Fashion-MNIST files, here
        src = '/usr/share/datasets/fashion-mnist'
        for f in os.listdir(src):
            os.symlink(os.path.join(src, f), os.path.join(work, f))
    elif name == 'hostfile':  # one node: the command as on a cluster, run here
        with open(os.path.join(work, 'hosts'), 'w') as f:
            f.write('localhost slots=4\n')
    elif name:
        raise SystemExit('check_docs.py: unknown fixture %r' % name)


VOLATILE = [
    (re.compile(r'\b(samples/s|rows/s|gflops|data_wait|forward|backward|allreduce|optimizer|ema|'
                r'data|total) [0-9][0-9.e+-]*'), r'\1 #'),
    (re.compile(r'\beta [0-9][0-9a-z]*'), 'eta #'),
    (re.compile(r'\b[0-9.]+ (s|min|ms)\b'), r'# \1'),
    # what computes dense on this CPU (oneDNN's sgemm on AVX-512, else OpenBLAS)
    (re.compile(r'; dense: [^;)]*'), ''),
]
FIGURES = re.compile(r'\b[0-9]+\.[0-9]+(e[+-][0-9]+)?\b')


def normal(line, strict):
    line = line.rstrip()
    if line.startswith('nodes '):
        line = re.sub(r'\S+ ranks', '# ranks', line)
    for pat, rep in VOLATILE:
        line = pat.sub(rep, line)
    if not strict and re.match(r'^(step|eval) ', line):
        line = FIGURES.sub('#', line)
    return line


def matches(shown, got, strict):
    """Whether got holds shown's lines in order, '...' standing for any."""
    shown = [normal(l, strict) for l in shown]
    got = [normal(l, strict) for l in got]
    parts, cur = [], []
    for line in shown:
        if line.strip() == '...':
            parts.append(cur)
            cur = []
        else:
            cur.append(line)
    parts.append(cur)
    at = 0
    for k, part in enumerate(parts):
        if not part:
            continue
        anchored = k == 0
        last = k == len(parts) - 1
        found = None
        for start in ([at] if anchored else range(at, len(got) - len(part) + 1)):
            if got[start:start + len(part)] == part and (not last or start + len(part) == len(got)):
                found = start
                break
        if found is None:
            return part[0]
        at = found + len(part)
    return None


def run_page(repo, build, page, strict):
    lines = read(repo, page)
    work = tempfile.mkdtemp(prefix='mtrain-docs-')
    for name, target in (('build', build), ('jobs', os.path.join(repo, 'jobs'))):
        os.symlink(target, os.path.join(work, name))
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMPI_MCA_rmaps_base_oversubscribe='1')
    if strict:
        env['OPENBLAS_CORETYPE'] = 'Haswell'
    last = None
    ran = 0
    for n, text, lang, body in blocks(lines):
        where = '%s:%d' % (page, n)
        m = marks(text)
        if m['kind'] == 'run':
            fixture(m.get('fixture'), work)
            out = ''
            for cmd in commands(body):
                cmd = re.sub(r'^jobs/setup\.sh(\s+--\S+)*\s*&&\s*', '', small(cmd, m.get('args')))
                p = subprocess.run(['bash', '-c', cmd], cwd=work, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True,
                                   timeout=int(m.get('timeout', 300)))
                out += p.stdout
                print('%s: $ %s  (exit %d)' % (where, cmd, p.returncode))
                if p.returncode:
                    tail = '\n    '.join(p.stdout.strip().split('\n')[-8:])
                    finding(where, '`%s` exited %d:\n    %s' % (cmd, p.returncode, tail))
                    break
            last = out
            ran += 1
        elif m['kind'] == 'output':
            if last is None:
                finding(where, 'an output block with no run block above it')
                continue
            bad = matches(body, last.rstrip('\n').split('\n'), strict)
            if bad is not None:
                finding(where, 'the output differs from the page from this line on: %r\n'
                        '    (the run printed:)\n    %s' % (bad, '\n    '.join(last.split('\n')[:40])))
        elif m['kind'] == 'shown-by':
            check_shown_by(repo, build, where, m.get('shown-by', ''), commands(body))
        else:
            finding(where, 'unknown doctest mark %r' % text)
    subprocess.run(['rm', '-rf', work])
    return ran


def check_shown_by(repo, build, where, test, cmds):
    listed = subprocess.run(['ctest', '-N', '-R', '^%s$' % re.escape(test)], cwd=build,
                            capture_output=True, text=True).stdout
    if 'Total Tests: 1' not in listed:
        finding(where, 'shown-by=%s: no such test' % test)
        return
    folder, _, name = test.partition('.')
    script = os.path.join(repo, 'tests', folder, name + '.sh')
    body = open(script, encoding='utf-8').read() if os.path.exists(script) else ''
    for cmd in cmds:
        words = shlex.split(cmd)
        need = [words[0]] + [w for w in words if '/' in w and os.path.exists(os.path.join(repo, w))]
        for w in need:
            if w not in body:
                finding(where, 'shown-by=%s: %s does not run %s' % (test, script, w))


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    what, repo = argv[1], os.path.abspath(argv[2])
    if what == 'links':
        check_links(repo)
    elif what == 'options':
        check_options(repo, argv[3])
    elif what == 'architecture':
        check_architecture(repo)
    elif what == 'run':
        build = os.path.abspath(argv[3])
        cpu = open('/proc/cpuinfo').read() if os.path.exists('/proc/cpuinfo') else ''
        # The pages' figures come from an AVX2 CPU; with AVX-512, dense's
        # products run on oneDNN's sgemm, whose sums give other last bits.
        strict = ' avx2' in cpu and ' fma' in cpu and ' avx512f' not in cpu
        if not strict:
            print('check_docs.py: not an AVX2 CPU without AVX-512: losses and accuracies '
                  'are compared as placeholders')
        todo = argv[4:] or [p for p in pages(repo) if p == 'README.md' or p.startswith('docs/')]
        ran = sum(run_page(repo, build, p, strict) for p in todo)
        print('check_docs.py: %d runnable blocks' % ran)
    else:
        raise SystemExit(__doc__)
    for f in findings:
        print(f)
    print('check_docs.py %s: %d findings' % (what, len(findings)))
    return 1 if findings else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
