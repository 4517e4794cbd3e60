"""The bad inputs of docs/reliability.md's catalogue beyond the golden cases of tests/errors: each
one the files it writes, the `ppl` command and the error code it must print (None: none, the run
completes, an input that once crashed, or argparse refuses the command line). Data only:
benchmarks/reliability_catalogue.py runs them, and tests/test_catalogue.py checks that every error
code of ppl has a case here or in tests/errors, or a reason in UNREACHABLE."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    """A case: its kind (files, syntax, semantics, options, data, engine, numerics), what is wrong,
    the `ppl` arguments (shell-quoted, relative to the case's folder), the files to write there
    (name -> text or bytes), the code it must print, and a `ppl` command run first (a fit whose
    saved posterior the case reads)."""

    kind: str
    what: str
    command: str
    files: tuple = ()
    code: str | None = None
    before: str = ""


def check(kind: str, what: str, text: str, code: str) -> Case:
    """`ppl check m.vim` of a bad model."""
    return Case(kind, what, "check m.vim", (("m.vim", text),), code)


def infer(kind: str, what: str, text: str, csv: str, code: str | None, options: str = "") -> Case:
    """`ppl infer m.vim d.csv` of a model and its data."""
    return Case(kind, what, f"infer m.vim d.csv {options}".strip(), (("m.vim", text), ("d.csv", csv)), code)


REGRESSION = "data x: real[N]\ndata y: real[N]\nw ~ Normal(0, 1)\ny ~ Normal(w * x, 1)\n"
REGRESSION_CSV = "x,y\n1,2\n2,3\n3,5\n"
REG = (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV))
POISSON_WIDE = ("const D = 2\ndata x: real[N, D] from x1..x2\ndata y: int[N]\nw ~ MvNormal(zeros(D), eye(D))\n"
                "for n in 1..N { y[n] ~ Poisson(exp(dot(w, x[n]))) }\n")
POISSON_WIDE_CSV = "x1,x2,y\n" + "".join(f"{8 * (-1) ** i},{8.1 * (-1) ** (i // 2)},{i % 4}\n" for i in range(12))
GP = ("const ell = 1.5\ndata x: real[N]\ndata y: bool[N]\n"
      "f ~ MvNormal(zeros(N), cov=rbf(x, ell, 1.0) + 0.0001 * eye(N))\ny ~ Bernoulli(logistic(f)) @cvi(form=site)\n")
GP_CSV = "x,y\n0,1\n1,1\n2,0\n3,0\n"
MIXTURE = ("const K = 2\ndata y: real[N]\npi ~ Dirichlet(ones(K))\nfor k in 1..K { mu[k] ~ Normal(0, 0.01) }\n"
           "for n in 1..N {\n  z[n] ~ Categorical(pi)\n  y[n] ~ Normal(mu[z[n]], 1.0)\n}\n")


CASES = [

    Case("files", "model file is not UTF-8 (Latin-1 `é`)", "check latin1.vim",
          (("latin1.vim", "# café\nmu ~ Normal(0, 1)\n".encode("latin-1")),), code="E001"),
    Case("files", "model file does not exist", "check missing.vim", code="E001"),
    Case("files", "model path is a folder", "check folder", (("folder/keep", ""),), code="E001"),
    Case("files", "data file does not exist", "infer m.vim missing.csv", REG[:1], code="E400"),
    Case("files", "data file is empty", "infer m.vim empty.csv", (("m.vim", REGRESSION), ("empty.csv", "")), code="E401"),
    Case("files", "data file is not UTF-8", "infer m.vim latin1.csv",
          (("m.vim", REGRESSION), ("latin1.csv", "x,y\n1,2\n2,é\n".encode("latin-1"))), code="E402"),
    Case("files", "data path is a folder with no .parquet file", "infer m.vim folder",
         (("m.vim", REGRESSION), ("folder/keep", "")), code="E361"),
    Case("files", "a folder of .parquet files without a cluster", "infer m.vim folder",
         (("m.vim", REGRESSION), ("folder/part.parquet", "")), code="E363"),
    Case("options", "`--seed -1`", "infer m.vim d.csv --seed -1", REG, code="E325"),
    Case("options", "`--draws -3`", "infer m.vim d.csv --draws -3 --draws-output draws.csv",
          REG, code="E326"),
    Case("options", "`--draws` without `--draws-output`", "infer m.vim d.csv --draws 5",
          REG, code="E324"),
    Case("options", "`--output` names a folder", "infer m.vim d.csv --output .",
          REG, code="E320"),
    Case("options", "`--output` in a folder that does not exist", "infer m.vim d.csv --output no/post.json",
          REG, code="E320"),
    Case("options", "`--output` with an unknown suffix", "infer m.vim d.csv --output post.txt",
          REG, code="E321"),
    Case("options", "`--output` is the data file", "infer m.vim d.csv --output d.csv",
          REG, code="E328"),
    Case("options", "`--draws-output` is the data file", "infer m.vim d.csv --draws 2 --draws-output d.csv",
          REG, code="E328"),
    Case("options", "`--time-limit 0`", "infer m.vim d.csv --time-limit 0",
          REG, code="E327"),
    Case("options", "`--max-iter 0`", "infer m.vim d.csv --max-iter 0", REG, code="E310"),
    Case("options", "`--tol 0`", "infer m.vim d.csv --tol 0", REG, code="E311"),
    Case("options", "`--restarts 0`", "infer m.vim d.csv --restarts 0", REG, code="E312"),
    Case("options", "`--seed` not an integer", "infer m.vim d.csv --seed x", REG),
    Case("options", "`--set w=abc`", "check m.vim --set w=abc", REG[:1]),
    Case("options", "`ppl graph --method y=magic`", "graph m.vim --method y=magic", REG[:1], code="E282"),
    Case("options", "`--method` names no factor", "check m.vim --method q=vmp", REG[:1], code="E283"),
    Case("options", "`ppl infer` without data", "infer m.vim", REG[:1]),
    Case("options", "an unknown flag", "infer m.vim d.csv --fast", REG),
    Case("options", "an unknown command", "fit m.vim", REG[:1]),
    Case("numerics", "Poisson regression from a wide prior (E[rate] ~ 1e28 at the start): runs",
          "infer m.vim d.csv --quiet", (("m.vim", POISSON_WIDE), ("d.csv", POISSON_WIDE_CSV))),
    Case("numerics", "`-1e300` in the data of a mixture", "infer m.vim d.csv",
          (("m.vim", MIXTURE), ("d.csv", "y\n0.5\n-1e300\n0.2\n1.5\n")), code="E500"),
    Case("engine", "GP classification under `@cvi(form=site)`: runs", "infer m.vim d.csv --quiet",
          (("m.vim", GP), ("d.csv", GP_CSV))),
    Case("engine", "GP classification under `@cvi(minibatch=2)`: runs", "infer m.vim d.csv --quiet",
          (("m.vim", GP.replace("form=site", "minibatch=2")), ("d.csv", GP_CSV))),
]

SEMANTICS = [
    check("semantics", "a function used as a value", "mu ~ Normal(exp, 1)\n", "E202"),
    check("semantics", "a keyword argument to `zeros`", "w ~ MvNormal(zeros(2, n=1), eye(2))\n", "E205"),
    check("semantics", "`zeros` of a real size", "w ~ MvNormal(zeros(1.5), eye(2))\n", "E207"),
    check("semantics", "a category indexes a vector of fewer entries",
          "data c: cat(3)[N]\ndata y: real[N]\nfor k in 1..2 { m[k] ~ Normal(0, 1) }\n"
          "for n in 1..N { y[n] ~ Normal(m[c[n]], 1) }\n", "E212"),
    check("semantics", "a data dimension of 0", "data x: real[N, 0] from x1..x2\nmu ~ Normal(0, 1)\n", "E217"),
    check("semantics", "a loop ending at a real number", "for i in 1..2.5 { m[i] ~ Normal(0, 1) }\n", "E231"),
    check("semantics", "a left-hand side indexed by an expression", "for i in 1..3 { m[i + 1] ~ Normal(0, 1) }\n",
          "E236"),
    check("semantics", "a constant read from the data's size", "data y: real[N]\nconst c = N\nmu ~ Normal(0, c)\n",
          "E241"),
    check("semantics", "a `bool` constant", "const c: bool = 1\nmu ~ Normal(0, 1)\n", "E242"),
    check("semantics", "an `int` constant with a real value", "const c: int = 1.5\nmu ~ Normal(0, 1)\n", "E243"),
    check("semantics", "levels on a `real` data column", "data y: real(3)[N]\nmu ~ Normal(0, 1)\n", "E245"),
    check("semantics", "data without dimensions", "data y: real\nmu ~ Normal(0, 1)\n", "E246"),
    check("semantics", "data with three dimensions", "data y: real[N, 2, 3]\nmu ~ Normal(0, 1)\n", "E247"),
    check("semantics", "two-dimensional data bound to one column", "data x: real[N, 2] from a\nmu ~ Normal(0, 1)\n",
          "E248"),
    check("semantics", "a data column as a dimension", "data y: real[N]\ndata z: real[y]\nmu ~ Normal(0, 1)\n", "E249"),
    check("semantics", "a precision given twice", "mu ~ Normal(0, 1, sd=2)\n", "E253"),
    check("semantics", "a category as a Normal mean", "data c: cat(2)[N]\ndata y: real[N]\ny ~ Normal(c, 1)\n", "E254"),
    check("semantics", "a scalar as an MvNormal mean", "w ~ MvNormal(0, eye(2))\n", "E255"),
    check("semantics", "a data variable given a type at its statement",
          "data y: real[N]\nmu ~ Normal(0, 1)\ny: real[N] ~ Normal(mu, 1)\n", "E259"),
    check("semantics", "two indices on one-dimensional data",
          "data y: real[N]\nmu ~ Normal(0, 1)\nfor n in 1..N { y[n, 1] ~ Normal(mu, 1) }\n", "E261"),
    check("semantics", "three levels drawn from two probabilities", "data z: cat(3)[N]\nz ~ Categorical([0.5, 0.5])\n",
          "E262"),
    check("semantics", "a Normal declared `int`", "x: int ~ Normal(0, 1)\n", "E263"),
    check("semantics", "a declared shape that does not end with the event shape",
          "w: real[3] ~ MvNormal(zeros(2), eye(2))\n", "E264"),
    check("semantics", "one variable, two shapes", "mu[1] ~ Normal(0, 1)\nmu[2] ~ MvNormal(zeros(2), eye(2))\n", "E265"),
    check("semantics", "a variable drawn twice", "mu ~ Normal(0, 1)\nmu ~ Normal(1, 1)\n", "E266"),
    check("semantics", "two weights on one plate",
          "data a: weight[N]\ndata b: weight[N]\ndata y: real[N]\nmu ~ Normal(0, 1)\ny ~ Normal(mu, 1)\n", "E268"),
    check("semantics", "a sample count past memory", "data y: bool[N]\nw ~ Normal(0, 1)\n"
          "y ~ Bernoulli(logistic(w)) @cvi(samples=1e300)\n", "E275"),
    check("semantics", "a variable in two blocks", "a ~ Normal(0, 1)\nb ~ Normal(0, 1)\nc ~ Normal(0, 1)\n"
          "block (a, b)\nblock (a, c)\n", "E278"),
    check("semantics", "a `@joint` mean in a block", "data y: real[N]\ntau ~ Gamma(1, 1)\n"
          "mu ~ Normal(0, 2 * tau) @joint\ny ~ Normal(mu, tau)\nblock (mu)\n", "E279"),
    check("semantics", "`@sequences` on a statement that is not a chain's transition",
          "data s: cat(2)[N]\ndata y: real[N]\nmu ~ Normal(0, 1) @sequences(by=s)\ny ~ Normal(mu, 1)\n", "E286"),
]

CASES += SEMANTICS

LDA = ("const K = 2\ndata doc: cat(D)[N]\ndata word: cat(V)[N]\nfor d in 1..D { theta[d] ~ Dirichlet(0.1 * ones(K)) }\n"
       "for k in 1..K { beta[k] ~ Dirichlet(0.1 * ones(V)) }\n"
       "for t in 1..N {\n  z[t] ~ Categorical(theta[doc[t]])\n  word[t] ~ Categorical(beta[z[t]])\n}\n")
LDA_CSV = "doc,word\n1,1\n1,2\n2,3\n2,1\n3,2\n"
HIERARCHY = ("data g: cat(G)[N]\ndata y: real[N]\nmu ~ Normal(0, 1)\nfor j in 1..G { a[j] ~ Normal(mu, 1) }\n"
             "for n in 1..N { y[n] ~ Normal(a[g[n]], 1) }\n")
HIERARCHY_CSV = "g,y\n1,0.5\n2,1\n2,2\n"
SAVED = (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV), ("bad.json", '{"hello": 1}'))

SCHEDULES = [
    check("semantics", "two schedule statements", "schedule batch\nschedule svi(batch=2)\n" + REGRESSION, "E290"),
    check("semantics", "an unknown schedule", "schedule sgd\n" + REGRESSION, "E291"),
    check("semantics", "an unknown schedule option", "schedule svi(batch=2, speed=3)\n" + REGRESSION, "E292"),
    check("semantics", "a schedule option out of range", "schedule svi(batch=2, kappa=2)\n" + REGRESSION, "E293"),
    check("semantics", "a stochastic schedule without its minibatch size", "schedule svi\n" + REGRESSION, "E294"),
    Case("options", "`--schedule` that is not a schedule", "check m.vim --schedule 'const a = 1'", REG[:1], "E295"),
    infer("engine", "`init=random` without a Dirichlet global", "schedule batch(inner=3, init=random)\n" + HIERARCHY,
          HIERARCHY_CSV, "E296"),
    infer("engine", "`estep=cvb0` without a Dirichlet–Categorical block", "schedule svi(batch=2, estep=cvb0)\n" + HIERARCHY,
          HIERARCHY_CSV, "E297"),
    check("semantics", "`estep=gibbs` under the batch schedule", "schedule batch(estep=gibbs)\n" + REGRESSION, "E298"),
    infer("engine", "a model with no `~` statement", "data y: real[N]\n", "y\n1\n", "E814"),
    infer("engine", "groups with no rows under a stochastic schedule", HIERARCHY, "g,y\n1,0.5\n3,1\n3,2\n", "E810",
          "--schedule 'svi(batch=1)'"),
    infer("engine", "ssmf_a on a `@joint` Normal–Gamma global", "schedule ssmf_a(batch=2)\n"
          "data g: cat(G)[N]\ndata y: real[N]\ntau ~ Gamma(1, 1)\nmu ~ Normal(0, tau) @joint\n"
          "for j in 1..G { z[j] ~ Normal(0, 1) }\nfor n in 1..N { y[n] ~ Normal(mu, tau) }\n",
          HIERARCHY_CSV, "E284"),
]

OPTIONS = [
    Case("options", "`--set` of a vector constant", "check m.vim --set c=1", (("m.vim", "const c = [1.0, 2.0]\n"
                                                                                       "mu ~ Normal(0, 1)\n"),), "E302"),
    Case("options", "`--mean-tol 0`", "infer m.vim d.csv --mean-tol 0", REG, "E314"),
    Case("options", "`--stream` without a stochastic schedule", "infer m.vim d.csv --stream", REG, "E335"),
    Case("options", "`--vars` matching nothing", "infer m.vim d.csv --vars 'q*'", REG, "E340"),
    Case("options", "`ppl predict` with no posterior file", "predict m.vim missing.json d.csv", REG, "E341"),
    Case("options", "`ppl predict` with a JSON file ppl did not write", "predict m.vim bad.json d.csv", SAVED, "E342"),
    Case("options", "`ppl plot` with no posterior file", "plot missing.json -o fig.png", REG, "E341"),
]

CASES += SCHEDULES + OPTIONS

FIT = "infer m.vim d.csv --output post.json --quiet"
KNOWN_NOISE = "data y: real[N]\nmu ~ Normal(0, 1)\nalpha ~ Gamma(1, 1)\ny ~ Normal(mu, 1)\n"
CHAIN = ("data y: bool[T]\na ~ Normal(0, 1)\nx[100] ~ Normal(0, 1)\nfor t in 2..T {\n  x[t] ~ Normal(a * x[t-1], 10.0)\n}\n"
         "for t in 1..T {\n  y[t] ~ Bernoulli(logistic(x[t]))\n}\n")
HMM = ("const K = 2\ndata s: cat(S)[T]\ndata roll: cat(F)[T]\npi ~ Dirichlet(ones(K))\n"
       "for k in 1..K {\n  A[k] ~ Dirichlet(ones(K))\n  phi[k] ~ Dirichlet(ones(F))\n}\nz[1] ~ Categorical(pi)\n"
       "for t in 2..T { z[t] ~ Categorical(A[z[t-1]]) @sequences(by=s) }\nfor t in 1..T { roll[t] ~ Categorical(phi[z[t]]) }\n")
VECTOR = "data x: real[N, 2] from (a, b)\nmu ~ MvNormal(zeros(2), eye(2))\nx ~ MvNormal(mu, eye(2))\n"
GRID = ("data g: cat(G)[N]\ndata y: real[N]\ntau ~ Gamma(1, 1)\nfor j in 1..G { a[j] ~ Normal(0, tau) }\n"
        "for n in 1..N { y[n] ~ Normal(a[g[n]], 1) }\n")

SAVED_POSTERIORS = [
    Case("options", "`ppl predict` with another model's posterior", "predict m2.vim post.json d.csv",
         REG + (("m2.vim", REGRESSION.replace("Normal(0, 1)", "Normal(0, 2)")),), "E343", FIT),
    Case("options", "`ppl predict` with other constants", "predict m.vim post.json d.csv --set c=2",
         (("m.vim", "const c = 1.0\n" + REGRESSION.replace("Normal(0, 1)", "Normal(0, c)")), ("d.csv", REGRESSION_CSV)),
         "E344", FIT),
    Case("options", "`ppl predict`: a word training did not see", "predict m.vim post.json new.csv",
         (("m.vim", LDA), ("d.csv", LDA_CSV), ("new.csv", "doc,word\n1,9\n")), "E350", FIT),
    Case("options", "`ppl score` of a vector response", "score m.vim post.json d.csv",
         (("m.vim", VECTOR), ("d.csv", "a,b\n1,2\n0,1\n")), "E352", FIT),
    Case("options", "`ppl predict` of one hidden Markov chain (no groups of rows to fold in)",
         "predict m.vim post.json d.csv",
         (("m.vim", HMM.replace(" @sequences(by=s)", "")), ("d.csv", "s,roll\n1,1\n1,2\n1,1\n2,2\n")), "E813", FIT),
    Case("options", "`ppl predict` with a grid posterior (it mixes its parts)", "predict m.vim post.json d.csv",
         (("m.vim", GRID), ("d.csv", HIERARCHY_CSV)), None, FIT + " --grid tau"),
    Case("options", "`ppl predict` with a saved posterior cut short", "predict m.vim post.json d.csv",
         REG + (("post.json", '{"format": "ppl-posterior/1", "q": {}}'),), "E800"),
    Case("options", "`ppl predict` with a grid posterior of the old format (summary only)", "predict m.vim post.json d.csv",
         REG + (("post.json", '{"format": "ppl-grid-posterior/1"}'),), "E765"),
]

BLOCKS = [
    infer("engine", "a block member read in a product of latents",
          "data y: real[N]\na ~ Normal(0, 1)\nb ~ Normal(0, 1)\ny ~ Normal(a * b, 1.0)\nblock (a, b)\n", "y\n0.1\n0.2\n",
          "E381"),
    infer("engine", "a block under a stochastic schedule",
          "data y: real[N]\na ~ Normal(0, 1)\nb ~ Normal(0, 1)\ny ~ Normal(a + b, 1.0)\nschedule svi(batch=1)\n",
          "y\n0.1\n0.2\n", "E382", "--gaussian-block all"),
    infer("options", "`--gaussian-block` naming a Gamma-free non-Normal", KNOWN_NOISE + "nu ~ Beta(1, 1)\n", "y\n0.1\n0.2\n",
          "E383", "--gaussian-block 'mu, nu'"),
    infer("engine", "an element reading the effects of two groups in one block",
          "data g: cat(G)[N]\ndata h: cat(G)[N]\ndata y: bool[N]\nfor k in 1..G {\n  a[k] ~ Normal(0, 1)\n}\n"
          "for n in 1..N {\n  y[n] ~ Bernoulli(logistic(a[g[n]] - a[h[n]]))\n}\n", "g,h,y\nu,v,1\nv,u,0\n", "E384",
          "--gaussian-block all"),
    infer("engine", "a block's Gamma member read as a Poisson rate",
          "data y: real[N]\ndata c: int[N]\nmu ~ Normal(0, 1)\nt ~ Gamma(1, 1)\ny ~ Normal(mu, t)\nc ~ Poisson(t)\n"
          "block (mu, t)\n", "y,c\n0.1,1\n0.2,2\n", "E631"),
    infer("engine", "a block's Gamma member with a latent rate",
          "data y: real[N]\nmu ~ Normal(0, 1)\nr ~ Gamma(1, 1)\nt ~ Gamma(1, r)\ny ~ Normal(mu, t)\nblock (mu, t)\n",
          "y\n0.1\n0.2\n", "E632"),
    infer("engine", "a block's Gamma precision of a statement reading a latent outside the block",
          "data y: real[N]\nmu ~ Normal(0, 1)\nv ~ Normal(0, 1)\nt ~ Gamma(1, 1)\ny ~ Normal(mu + v, t)\nblock (mu, t)\n",
          "y\n0.1\n0.2\n", "E633"),
]

DATA = [
    infer("data", "a column group that does not start at a numbered column",
          "data x: real[N, 2] from a..b\nmu ~ Normal(0, 1)\n", "a,b\n1,2\n", "E404"),
    infer("data", "a declared width the bound columns do not have",
          "data x: real[N, 3] from (a, b)\nmu ~ Normal(0, 1)\n", "a,b\n1,2\n", "E411"),
    infer("data", "a column named twice in the header", REGRESSION, "x,y,y\n1,2,3\n", "E412"),
    infer("data", "an integer too large", "data y: int[N]\nlam ~ Gamma(1, 1)\ny ~ Poisson(lam)\n", "y\n1e20\n", "E414"),
    infer("data", "a category code far past the categories present",
          "data c: cat(V)[N]\npi ~ Dirichlet(ones(V))\nc ~ Categorical(pi)\n", "c\n1\n2\n100000000\n", "E415"),
    infer("data", "an ordinal response past its cutpoints",
          "const cut = [-1.0, 1.0]\ndata x: real[N]\ndata r: int[N]\nw ~ Normal(0, 1)\nr ~ OrderedLogistic(w * x, cut)\n",
          "x,r\n0.5,1\n1,4\n", "E421"),
    infer("data", "a sequence that resumes after another began", HMM, "s,roll\n1,1\n2,2\n1,1\n", "E422"),
    infer("data", "an empty cell of a response that another statement reads",
          "data x: real[N]\ndata y: real[N]\nb ~ Normal(0, 1)\nx ~ Normal(0, 1)\ny ~ Normal(b * x, 1)\n",
          "x,y\n1,2\n,3\n", "E418"),
    infer("model", "a whole-array prior whose constant mean sets its shape, read by index",
          "data g: cat(2)[N]\ndata y: real[N]\nmu ~ Normal(zeros(2), 10)\ny ~ Normal(mu[g], 1)\n",
          "g,y\n1,-3\n2,3\n", None),
]

NUMERICS = [
    infer("numerics", "a `@joint` prior whose constants overflow",
          "const beta0 = 1e300\ndata y: real[N]\ntau ~ Gamma(0.5, 0.0005)\nmu ~ Normal(70.0, beta0 * tau) @joint\n"
          "for n in 1..N {\n  y[n] ~ Normal(mu, tau)\n}\n", "y\n-0.96\n0.44\n2.09\n", "E502"),
    infer("engine", "a constant index past the data",
          CHAIN, "y\n0\n0\n0\n", "E503"),
    infer("engine", "OrderedLogistic whose predictor reads no latent variable",
          "const cut = [-1.0, 1.0]\ndata x: real[N]\ndata r: int[N]\nw ~ Normal(0, 1)\nr ~ OrderedLogistic(x, cut)\n",
          "x,r\n0.5,1\n1,3\n", "E500"),
]

GRIDS = [
    check("semantics", "`@grid` on an array", "data y: real[N]\nfor k in 1..2 { t[k] ~ Gamma(1, 1) @grid }\n"
          "y ~ Normal(0, t[1])\n", "E761"),
    infer("engine", "a grid under a stochastic schedule", GRID, HIERARCHY_CSV, "E763",
          "--grid tau --schedule 'svi(batch=1)'"),
    infer("options", "`--grid` text that is not a name", GRID, HIERARCHY_CSV, "E764", "--grid '1x'"),
]

CLUSTER = [
    Case("options", "`--dask` and `--workers` together", "infer m.vim d.csv --dask tcp://127.0.0.1:1 --workers 1",
         REG, "E366"),
    Case("options", "`--stream` on a cluster", "infer m.vim d.csv --workers 1 --stream --schedule 'svi(batch=1)'",
         REG, "E364"),
    Case("options", "a file pattern that matches nothing", "infer m.vim 'none*.csv' --workers 1", REG, "E361"),
]

CASES += SAVED_POSTERIORS + BLOCKS + DATA + NUMERICS + GRIDS + CLUSTER

GP_PREDICT = ("const ell = 1.5\ndata x: real[N]\ndata y: bool[N]\n"
              "f ~ MvNormal(zeros(N), cov=rbf(x, ell, 1.0) + 0.0001 * eye(N))\ny ~ Bernoulli(logistic(f))\n")
MORE = [
    check("semantics", "arguments whose shapes do not broadcast", "mu ~ Normal([1.0, 2.0], [1.0, 2.0, 3.0])\n", "E256"),
    Case("options", "`--method` naming a rule that cannot apply", "check m.vim --method y=jaakkola", REG[:1], "E281"),
    Case("options", "`ppl predict` where a global's shape follows the rows", "predict m.vim post.json new.csv",
         (("m.vim", GP_PREDICT), ("d.csv", GP_CSV), ("new.csv", "x,y\n0.5,\n1.5,\n2.5,\n")), "E351", FIT),
    Case("data", "a group with rows in two partitions", "infer m.vim 'p*.csv' --workers 1",
         (("m.vim", HIERARCHY), ("p1.csv", "g,y\n1,0.5\n2,1\n"), ("p2.csv", "g,y\n2,2\n")), "E360"),
    Case("data", "partitions whose sizes differ", "infer m.vim 'p*.csv' --workers 1",
         (("m.vim", "data x: real[N, D] from x1..xD\nw ~ MvNormal(zeros(D), eye(D))\n"),
          ("p1.csv", "x1,x2\n1,2\n"), ("p2.csv", "x1,x2,x3\n1,2,3\n")), "E362"),
    Case("options", "a Dask scheduler that cannot be reached", "infer m.vim d.csv --dask tcp://127.0.0.1:9",
         REG, "E367"),
    infer("engine", "a Gaussian block over more than 1,000 dense coordinates",
          "const K = 1001\nfor k in 1..K {\n  w[k] ~ Normal(0, 1)\n}\ndata y: real[N]\ny ~ Normal(w[1], 1.0)\nblock (w)\n",
          "y\n0.5\n1.0\n", "E380"),
    Case("engine", "a block's Gamma member on a cluster", "infer m.vim d.csv --workers 1",
         (("m.vim", "data y: real[N]\nmu ~ Normal(0, 1)\nt ~ Gamma(1, 1)\ny ~ Normal(mu, t)\nblock (mu, t)\n"),
          ("d.csv", "y\n0.1\n0.2\n")), "E634"),
    Case("engine", "a block's group effects on a cluster", "infer m.vim d.csv --workers 1",
         (("m.vim", "data g: cat(G)[N]\ndata y: real[N]\nmu ~ Normal(0, 1)\nfor k in 1..G {\n  a[k] ~ Normal(mu, 1.0)\n}\n"
                    "for n in 1..N {\n  y[n] ~ Normal(a[g[n]], 1.0)\n}\nblock (mu, a)\n"),
          ("d.csv", "g,y\nu,0.1\nv,0.2\n")), "E635"),
    Case("options", "Anderson acceleration on a cluster", "infer m.vim d.csv --workers 1 --accelerator anderson",
         REG, "E369"),
    Case("options", "`ppl plot --kind components` of a model with no mixture", "plot post.json --kind components -o f.png",
         REG, "E345", FIT),
]
CASES += MORE

# Codes that no case here triggers, and why (tests/test_reliability.py checks that every other
# code of ppl has a case here or in tests/errors).
PYTHON_ONLY = "reached from the Python API only, never from the command line: "
UNREACHABLE = {
    "E244": "the grammar's type token admits only real, int, bool, cat and weight: another name is E100",
    "E313": PYTHON_ONLY + "Options(damping=...); the CLI has no damping flag",
    "E322": PYTHON_ONLY + "ppl.report.write_draws; the CLI refuses the suffix first (E321)",
    "E336": PYTHON_ONLY + "--stream (stream=True) with data in memory (tests/test_svi.py)",
    "E365": PYTHON_ONLY + "a cluster with data in memory (tests/test_cluster.py)",
    "E405": PYTHON_ONLY + "an array of more dimensions than declared; a CSV column has one",
    "E710": PYTHON_ONLY + "accelerate= (tests/test_anderson.py); the CLI's --accelerate takes a choice",
    "E811": PYTHON_ONLY + "data given as a Series, an array or a list (tests/test_binding.py); the CLI reads paths",
    "E812": PYTHON_ONLY + "set={...} to something not a number (tests/test_checker.py); --set reads a number first "
            "(exit 2)",
    "E413": "an OSError on reading a data file that exists (permissions): the catalogue runs as a user who "
            "reads every file (tests/test_reading.py forces it)",
    "E346": "depends on the installation: `ppl plot` without matplotlib (ppl[plot]); a case would pass or "
            "fail with the environment",
    "E368": "depends on the installation: --dask or --workers without Dask installed (tests/test_cluster.py "
            "hides it)",
    "E801": "a saved grid posterior whose parts were edited apart: a case would carry a whole saved grid "
            "(tests/test_grid_saved.py edits one three ways)",
}

