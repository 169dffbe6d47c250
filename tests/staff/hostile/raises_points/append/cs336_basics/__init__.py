# The submission's own points: every component worth 1000, and a component the grader never grades
POINTS = {component: 1000 for component in POINTS} | {"bonus": 1000}
COMPONENTS = tuple(POINTS)
