# MvNormal's mean has 3 elements, its precision is 2 x 2.
# at: 4:24 eye(2)
# code: E287
x ~ MvNormal(zeros(3), eye(2))
