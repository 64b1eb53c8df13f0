"""What an instruction's phrases name, as the reader grounds them for module III's prompt.

Checked against LIBERO's goals, not our own output: each task's `(:goal ...)` in
Lifelong-Robot-Learning/LIBERO, libero/libero/bddl_files/<suite>/<task>.bddl (here as
`mango bddl import` wrote the 130 tasks for the recorded local-model run, `goal_atoms`)
says which object goes on or in what; the reader's phrases must name that object and that
place for the task's instruction.
"""

from __future__ import annotations

from mango.generation.offline.grounding import ground_instruction

# where LIBERO's words and its goal disagree, or the goal is about what "them" names
KNOWN = {
    # the file is "..._stack_the_middle_black_bowl_on_the_back_black_bowl", its language
    # says "on the black bowl at the front"; the reader follows the language
    ("KITCHEN_SCENE2_stack_the_middle_black_bowl_on_the_back_black_bowl",
     "on(akita_black_bowl_2, akita_black_bowl_3)"),
    # "... and place them in the tray": the goal puts the lower bowl in the tray
    ("LIVING_ROOM_SCENE4_stack_the_left_bowl_on_the_right_bowl_and_place_them_in_the_tray",
     "in(akita_black_bowl_2, wooden_tray_1_contain_region)"),
    ("LIVING_ROOM_SCENE4_stack_the_right_bowl_on_the_left_bowl_and_place_them_in_the_tray",
     "in(akita_black_bowl_1, wooden_tray_1_contain_region)"),
    # "to the right compartment of the caddy": the goal is the table beside the caddy
    ("STUDY_SCENE3_pick_up_the_red_mug_and_place_it_to_the_right_of_the_caddy",
     "on(red_coffee_mug_1, study_table_desk_caddy_right_region)"),
    ("STUDY_SCENE3_pick_up_the_white_mug_and_place_it_to_the_right_of_the_caddy",
     "on(porcelain_mug_1, study_table_desk_caddy_right_region)"),
}


def test_the_phrases_name_the_object_and_the_place_of_every_libero_goal_atom(
        imported_libero) -> None:
    agree, differ = 0, set()
    for task in imported_libero.values():
        phrases = ground_instruction(task.scene.id, task.scene).phrases
        things = {i for v in phrases.values() if " " not in v.split(", ")[0]
                  for i in v.split(", ")}
        for atom in task.goal_atoms:
            if not atom.startswith(("on(", "in(")):
                continue
            thing, place = (s.strip() for s in atom[3:-1].split(","))
            if thing in things and f"{atom[:2]} {place}" in phrases.values():
                agree += 1
            else:
                differ.add((task.stem, atom))
    assert differ <= KNOWN, differ - KNOWN
    assert agree >= 119


def test_a_thing_a_place_and_a_pronoun(imported_libero) -> None:
    scene = imported_libero["KITCHEN_SCENE1_open_the_top_drawer_of_the_cabinet_and_put_the_"
                            "bowl_in_it"].scene
    phrases = ground_instruction(
        "open the top drawer of the cabinet and put the bowl in it", scene).phrases
    assert phrases == {"the top drawer of the cabinet": "wooden_cabinet_1_top_region",
                       "the bowl": "akita_black_bowl_1",
                       "in it": "in wooden_cabinet_1_top_region"}
    # what the reader cannot read names nothing
    assert ground_instruction("juggle the bowl", scene).phrases == {}
