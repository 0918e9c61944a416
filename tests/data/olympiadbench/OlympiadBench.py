# A stand-in for opencompass/datasets/OlympiadBench.py, written for the tests: the same
# code shape (the functions prompt_compiler reads), with this project's own short texts.
# prompt_compiler parses it with ast and never runs it.


def get_single_answer_type_text(answer_type, is_chinese):
    if '-' in answer_type:
        answer_type = answer_type[:answer_type.find('-')]
    chinese_answer_type_dict = {'Numerical': 'ZH-NUM', 'Interval': 'ZH-INT'}
    english_answer_type_dict = {'Numerical': 'a number', 'Interval': 'a range'}
    for t in ['Numerical', 'Interval']:
        if t in answer_type:
            if is_chinese:
                return chinese_answer_type_dict[t]
            else:
                return english_answer_type_dict[t]
    raise ValueError(answer_type)


def get_answer_type_text(answer_type, is_chinese, multiple_answer):
    if ('Need_human_evaluate' in answer_type) or ('Tuple' in answer_type):
        return ''
    if not multiple_answer:
        answer_text = get_single_answer_type_text(answer_type, is_chinese)
        if is_chinese:
            return f'[zh one: {answer_text}]'
        else:
            return f'[one: {answer_text}] '
    if ',' not in answer_type:
        answer_text = get_single_answer_type_text(answer_type, is_chinese)
        if is_chinese:
            return f'[zh all: {answer_text}]'
        else:
            return f'[all: {answer_text}] '
    answer_types = answer_type.split(',')
    answer_types = [get_single_answer_type_text(t, is_chinese) for t in answer_types]
    if len(set(answer_types)) == 1:
        answer_text = answer_types[0]
        if is_chinese:
            return f'[zh same: {answer_text}]'
        else:
            return f'[same: {answer_text}] '
    else:
        if is_chinese:
            answer_text = '+'.join(answer_types)
            return f'[zh each: {answer_text}]'
        else:
            answer_text = ' & '.join(answer_types)
            return f'[each: {answer_text}] '


class OlympiadBenchPrompter:

    def make_prompt(self, language, subject, question_type, answer_type,
                    is_multiple_answer, unit):
        self.is_chinese = language == 'Chinese'
        self.is_math = subject == 'Math'
        self.is_theorem_proving = question_type == 'Theorem proof'
        if self.is_chinese:
            subject_content = 'ZH-MATH' if self.is_math else 'ZH-PHYS'
            if self.is_theorem_proving:
                prompt = f'ZH prove ({subject_content}).'
            else:
                answer_type_text = get_answer_type_text(answer_type, is_chinese=True,
                                                        multiple_answer=is_multiple_answer)
                if is_multiple_answer:
                    multiple_answer_text = '<zh many>'
                else:
                    multiple_answer_text = '<zh one>'
                unit_text = ''
                if unit:
                    multiple_answer_text += '(zh unit)'
                    unit_text = ' ZH no unit in box'
                prompt = (f'ZH solve ({subject_content}){answer_type_text}. '
                          f'Box {multiple_answer_text}{unit_text}.')
        else:
            subject_content = 'Math' if self.is_math else 'Physics'
            if self.is_theorem_proving:
                prompt = f'Prove this {subject_content} claim.'
            else:
                if is_multiple_answer:
                    multiple_answer_text = '<many>'
                else:
                    multiple_answer_text = '<one>'
                unit_text = ''
                if unit:
                    multiple_answer_text += '(unit)'
                    unit_text = ', unit outside the box'
                answer_type_text = get_answer_type_text(answer_type, is_chinese=False,
                                                        multiple_answer=is_multiple_answer)
                prompt = (f'Solve this {subject_content} task. {answer_type_text}'
                          f'Box {multiple_answer_text}{unit_text}.')
        prompt = prompt + '\n' + '{problem}' + '\n'
        if self.is_chinese:
            prompt += '\nZH steps.'
        else:
            prompt += '\nSteps.'
        return prompt
