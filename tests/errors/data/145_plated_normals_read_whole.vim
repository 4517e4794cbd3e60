# A vector of independent Normals read whole in a vector mean (`c + ...` with c[p] ~ Normal).
# command: infer
# at: 9:33 c
# code: E500
data Y: real[N, P] from (y1, y2)
for p in 1..P {
  c[p] ~ Normal(0, 1)
}
for n in 1..N { Y[n] ~ MvNormal(c, eye(P)) }
